#!/usr/bin/env bash
# Builds the node's two images as docker-archive tarballs, with no registry
# and no docker: the pod sandbox's pause image (scripts/k8s/pause/pause.c,
# static) and agentbox:dev, a debootstrapped Debian bookworm root (git,
# make, ca-certificates, a user agent of uid 1000, Claude Code's native CLI
# from the npm registry) plus a layer with this checkout's agentbox,
# agentbox-helper and the fake model API the tests serve (test/k8s/fakeapi).
#
# Usage: images.sh CACHE_DIR OUT_DIR -> writes OUT_DIR/pause.tar and
# OUT_DIR/agentbox.tar. The base root is cached in CACHE_DIR/base-<hash>
# (keyed by this script), so a warm call only builds the top layer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${1:?usage: images.sh CACHE_DIR OUT_DIR}
outdir=${2:?usage: images.sh CACHE_DIR OUT_DIR}
mirror=${AGENTBOX_K8S_MIRROR:-http://deb.debian.org/debian}
claude_version=2.1.197
export PATH=/usr/local/go/bin:$PATH
log() { echo "images.sh: $(date +%T) $*" >&2; }
mkdir -p "$outdir"

# archive NAME:TAG OUT LAYER... — a docker-archive (manifest.json, a config,
# uncompressed layer tars) that `ctr images import` reads.
archive() {
  local ref=$1 out=$2; shift 2
  local d; d=$(mktemp -d)
  local layers=() diffs=() l sum
  for l in "$@"; do
    sum=$(sha256sum "$l" | cut -d' ' -f1)
    ln "$l" "$d/$sum.tar" 2>/dev/null || cp "$l" "$d/$sum.tar"
    layers+=("\"$sum.tar\""); diffs+=("\"sha256:$sum\"")
  done
  local IFS=,
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s,"WorkingDir":"%s","User":"%s"},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$ENTRYPOINT" "$WORKDIR" "$USERID" "${diffs[*]}" >"$d/config.json"
  sum=$(sha256sum "$d/config.json" | cut -d' ' -f1)
  mv "$d/config.json" "$d/$sum.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]' "$sum" "$ref" "${layers[*]}" >"$d/manifest.json"
  tar -C "$d" -cf "$out" .
  rm -rf "$d"
}

# The pause image: one static binary.
pkey=$(sha256sum "$here/pause/pause.c" "$0" | sha256sum | cut -c1-12)
pdir=$cache/pause-$pkey
if [ ! -f "$pdir/layer.tar" ]; then
  mkdir -p "$pdir/root"
  gcc -static -Os -o "$pdir/root/pause" "$here/pause/pause.c"
  tar -C "$pdir/root" --numeric-owner --owner=0 --group=0 -cf "$pdir/layer.tar.tmp" pause
  mv "$pdir/layer.tar.tmp" "$pdir/layer.tar"
fi
ENTRYPOINT='["/pause"]' WORKDIR=/ USERID=65535 archive agentbox.invalid/pause:1 "$outdir/pause.tar" "$pdir/layer.tar"

# The agentbox image's base: Debian, the agent user, Claude Code.
bkey=$(sha256sum "$0" | cut -c1-12)
bdir=$cache/base-$bkey
if [ ! -f "$bdir/layer.tar" ]; then
  rm -rf "$bdir"; mkdir -p "$bdir"
  root=$bdir/root
  log "debootstrap bookworm (git, make, ca-certificates)"
  nice -n 15 debootstrap --variant=minbase --include=git,make,ca-certificates,openssh-client \
    bookworm "$root" "$mirror" >"$bdir/debootstrap.log" 2>&1 || { tail -20 "$bdir/debootstrap.log" >&2; exit 1; }
  chroot "$root" /usr/sbin/groupadd -g 1000 agent
  chroot "$root" /usr/sbin/useradd -u 1000 -g 1000 -d /home/agent -M -s /bin/sh agent
  mkdir -p "$root/home/agent" "$root/ws"
  chown 1000:1000 "$root/home/agent" "$root/ws"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  log "Claude Code $claude_version (the native CLI its npm package installs)"
  tgz=$(cd "$bdir" && npm pack --silent "@anthropic-ai/claude-code-linux-x64@$claude_version" | tail -1)
  tar -xzf "$bdir/$tgz" -C "$bdir" package/claude
  install -m 0755 "$bdir/package/claude" "$root/usr/local/bin/claude"
  rm -rf "$bdir/package" "$bdir/$tgz"
  tar -C "$root" --numeric-owner -cf "$bdir/layer.tar.tmp" .
  mv "$bdir/layer.tar.tmp" "$bdir/layer.tar"
  rm -rf "$root"
fi

# This checkout's binaries.
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
mkdir -p "$top/usr/local/bin"
(cd "$repo" && CGO_ENABLED=0 nice -n 15 go build -trimpath -o "$top/usr/local/bin/agentbox" ./cmd/agentbox &&
  CGO_ENABLED=0 nice -n 15 go build -trimpath -o "$top/usr/local/bin/agentbox-helper" ./cmd/agentbox-helper &&
  CGO_ENABLED=0 nice -n 15 go build -trimpath -o "$top/usr/local/bin/agentbox-fakeapi" ./test/k8s/fakeapi)
tar -C "$top" --numeric-owner --owner=0 --group=0 -cf "$top.layer.tar" usr
ENTRYPOINT='["/usr/local/bin/agentbox"]' WORKDIR=/ws USERID=1000 archive docker.io/library/agentbox:dev "$outdir/agentbox.tar" "$bdir/layer.tar" "$top.layer.tar"
rm -f "$top.layer.tar"
echo "$outdir"
