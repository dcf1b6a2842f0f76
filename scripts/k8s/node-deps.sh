#!/usr/bin/env bash
# Unpacks the node's other parts from Debian's packages, without installing
# them: etcd, containerd (and ctr, its shim), runc and the CNI plugins,
# fetched with `apt-get download` and unpacked with `dpkg -x` into
# CACHE_DIR/debs-<hash>/root (keyed by this script; a second call prints it
# at once). Usage: node-deps.sh CACHE_DIR -> prints the root directory.
set -euo pipefail
cache=${1:?usage: node-deps.sh CACHE_DIR}
pkgs=(etcd-server containerd runc containernetworking-plugins)
hash=$(sha256sum "$0" | cut -c1-12)
out=$cache/debs-$hash
if [ -f "$out/.done" ]; then echo "$out/root"; exit 0; fi
rm -rf "$out"
mkdir -p "$out/debs" "$out/root"
cd "$out/debs"
if ! apt-get download "${pkgs[@]}" >/dev/null 2>&1; then
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get download "${pkgs[@]}" >/dev/null || { echo "node-deps: apt-get download ${pkgs[*]} failed (no package sources?)" >&2; exit 1; }
fi
for d in ./*.deb; do dpkg -x "$d" "$out/root"; done
for b in usr/bin/etcd usr/bin/containerd usr/bin/ctr usr/bin/containerd-shim-runc-v2 usr/sbin/runc usr/lib/cni/bridge usr/lib/cni/host-local usr/lib/cni/loopback; do
  [ -x "$out/root/$b" ] || { echo "node-deps: $b missing from the unpacked packages" >&2; exit 1; }
done
touch "$out/.done"
echo "$out/root"
