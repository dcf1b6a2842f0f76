#!/usr/bin/env bash
# Builds the Kubernetes control plane and node binaries (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl) from the Go module
# proxy, with no container registry and no git clone: a small wrapper module
# requires k8s.io/kubernetes and maps each of its staging modules (which its
# own go.mod replaces with ./staging/src/..., a replace that does not apply
# to a dependency) to the version published for that release.
#
# Usage: build-kube.sh CACHE_DIR  -> prints the directory holding the binaries.
# The result is cached under CACHE_DIR/kube-<version>-<hash of this script>;
# a second call with the same script and version prints it without building.
# The build runs at nice 15: the machine is shared.
set -euo pipefail
cache=${1:?usage: build-kube.sh CACHE_DIR}
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
staging_version=v0.${KUBE_VERSION#v1.}
hash=$(sha256sum "$0" | cut -c1-12)
out=$cache/kube-$KUBE_VERSION-$hash
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
if [ -f "$out/.done" ]; then echo "$out"; exit 0; fi
export PATH=/usr/local/go/bin:$PATH
mkdir -p "$out/src" "$out/bin"
src=$out/src
export GOCACHE=$cache/gocache GOFLAGS=-mod=mod CGO_ENABLED=0
# The staging modules, read from the release's own go.mod.
modfile=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
[ -n "$modfile" ] || { echo "build-kube: k8s.io/kubernetes@$KUBE_VERSION not on the module proxy" >&2; exit 1; }
{
  echo "module agentbox.invalid/kubebuild"
  echo
  echo "go 1.24.0"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging_version"'#p' "$modfile"
  echo ")"
} >"$src/go.mod"
: >"$src/go.sum"
pkgs=()
for b in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
ld="-s -w"
for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean"
done
cd "$src"
nice -n 15 go build -p 2 -trimpath -ldflags "$ld" -o "$out/bin/" "${pkgs[@]}" >&2
for b in "${bins[@]}"; do [ -x "$out/bin/$b" ] || { echo "build-kube: $b not built" >&2; exit 1; }; done
touch "$out/.done"
echo "$out"
