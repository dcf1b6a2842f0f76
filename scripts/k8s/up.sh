#!/usr/bin/env bash
# Brings up a single-node Kubernetes cluster on this machine, from nothing
# or from the cache (docs/operations.md, "Testing on a real node"): the
# binaries from build-kube.sh and node-deps.sh, certificates made here by
# openssl, etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd and the kubelet as processes of this script (their PIDs in
# STATE/pids, for down.sh), the images of images.sh imported with ctr, a
# pod network bridge (abk0, 10.88.0.0/24) with no route out of it.
#
# Usage: up.sh STATE_DIR. Prints `export KUBECONFIG=...` lines on success.
# Each phase is bounded (AGENTBOX_K8S_BUILD_TIMEOUT for the cold build,
# default 45m); on failure the caller runs down.sh STATE_DIR.
# Host quirks handled: containerd's restrict_oom_score_adj (root here may
# lack CAP_SYS_RESOURCE), the kubelet's cgroupfs driver on cgroup v1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
S=${1:?usage: up.sh STATE_DIR}
cache=${AGENTBOX_K8S_CACHE:-/var/cache/agentbox-k8s}
node=agentbox-k8s-node
etcd_port=23790 api_port=16443 kubelet_port=10350
mkdir -p "$S/pids" "$S/logs" "$S/pki"
t0=$(date +%s.%N)
phase() { echo "up.sh: $(date +%T) $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%6.1fs", b-a}') $*" >&2; }
die() { echo "up.sh: $*" >&2; exit 1; }
# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds or time is up.
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "$what: not ready after ${secs}s (logs in $S/logs)"
    sleep 0.2
  done
}
start() { # start NAME CMD...: a process of this cluster, logged, PID kept
  local name=$1; shift
  setsid "$@" >"$S/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$S/pids/$name"
}

phase "building (or reusing) the binaries"
# A step that fails for want of what the cache lacks says "no package
# sources" (the test skips on it): the module proxy and the Debian mirror
# are asked only then.
proxy_ok() { PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=mod timeout 2m go mod download "k8s.io/kubernetes@${KUBE_VERSION:-v1.34.4}" >/dev/null 2>&1; }
mirror_ok() { timeout 1m curl -fsI "${AGENTBOX_K8S_MIRROR:-http://deb.debian.org/debian}/dists/bookworm/Release" >/dev/null 2>&1; }
# bounded LIMIT OUT CMD...: CMD under timeout(1), its stdout in OUT.
# timeout makes a process group of its own, which a signal to ours (CI's
# own timeout, the test binary's teardown) does not reach: a signal to
# this script ends that group too, so no build outlives the run.
bounded() {
  local limit=$1 out=$2; shift 2
  timeout "$limit" "$@" >"$out" &
  bounded_pid=$!
  wait "$bounded_pid"
}
trap '[ -n "${bounded_pid:-}" ] && kill -TERM -- "-$bounded_pid" 2>/dev/null; exit 143' TERM INT
bounded "${AGENTBOX_K8S_BUILD_TIMEOUT:-45m}" "$S/kube.dir" "$here/build-kube.sh" "$cache" ||
  { proxy_ok || die "no package sources: k8s.io/kubernetes not on the Go module proxy"; die "the Kubernetes build failed or timed out"; }
bounded 10m "$S/debs.dir" "$here/node-deps.sh" "$cache" || die "no package sources: apt-get download of the node's packages failed"
bounded 20m /dev/null "$here/images.sh" "$cache" "$S/images" ||
  { mirror_ok || die "no package sources: the Debian mirror cannot be reached for the image's base"; die "images.sh failed"; }
kube=$(cat "$S/kube.dir") debs=$(cat "$S/debs.dir")
K=$kube/bin D=$debs
export PATH=$K:$D/usr/bin:$D/usr/sbin:$PATH
echo "$K" >"$S/kubebin"; echo "$D" >"$S/debroot"
phase "binaries ready"

node_ip=$(ip -4 -o addr show scope global | awk '{sub(/\/.*/,"",$4); print $4; exit}')
[ -n "$node_ip" ] || die "no global IPv4 address for the node"
echo "$node_ip" >"$S/node_ip"

# Certificates: a CA, the apiserver's serving cert, clients (admin in
# system:masters, the kubelet as system:node:NODE, the apiserver to the
# kubelet), the service-account signing key.
P=$S/pki
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 2 -subj /CN=agentbox-k8s-ca
cert() { # cert NAME SUBJ [SAN]
  ossl req -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.csr" -subj "$2"
  if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" >"$P/$1.ext"; else : >"$P/$1.ext"; fi
  ossl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/$1.crt" -days 2 -extfile "$P/$1.ext"
}
cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$node_ip,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost"
cert admin "/O=system:masters/CN=agentbox-k8s-admin"
cert kubelet "/O=system:nodes/CN=system:node:$node"
cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert kubelet-serving "/CN=$node" "IP:$node_ip,DNS:$node"
ossl genrsa -out "$P/sa.key" 2048
ossl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub"
kubeconfig() { # kubeconfig FILE CERT
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$P/ca.crt"}}]
users: [{name: u, user: {client-certificate: "$P/$2.crt", client-key: "$P/$2.key"}}]
contexts: [{name: c, context: {cluster: local, user: u}}]
current-context: c
KC
}
kubeconfig "$S/admin.kubeconfig" admin
kubeconfig "$S/kubelet.kubeconfig" kubelet
export KUBECONFIG=$S/admin.kubeconfig
phase "certificates"

start etcd etcd --name node --data-dir "$S/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls http://127.0.0.1:23800 \
  --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster node=http://127.0.0.1:23800
start kube-apiserver kube-apiserver --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 \
  --secure-port "$api_port" --advertise-address "$node_ip" --service-cluster-ip-range 10.96.0.0/24 \
  --client-ca-file "$P/ca.crt" --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --kubelet-preferred-address-types InternalIP --kubelet-client-certificate "$P/apiserver-kubelet.crt" --kubelet-client-key "$P/apiserver-kubelet.key" \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$P/sa.pub" \
  --service-account-signing-key-file "$P/sa.key" --authorization-mode Node,RBAC --allow-privileged=false
wait_for 120 "kube-apiserver" kubectl get --raw /readyz
phase "apiserver ready"
start kube-controller-manager kube-controller-manager --kubeconfig "$S/admin.kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port 20257 --cert-dir "$S/cm-certs" \
  --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" --use-service-account-credentials=false
start kube-scheduler kube-scheduler --kubeconfig "$S/admin.kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port 20259 --cert-dir "$S/sched-certs"

# containerd: its own root, state and socket; the CRI's pause image ours.
mkdir -p "$S/cni/conf" "$S/containerd"
cat >"$S/containerd/config.toml" <<CT
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$S/containerd.sock"
[ttrpc]
  address = "$S/containerd-ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "agentbox.invalid/pause:1"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$D/usr/lib/cni"
    conf_dir = "$S/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = "$D/usr/sbin/runc"
      SystemdCgroup = false
CT
# The pod network: a bridge with the pods' gateway address, no masquerade
# and no default route in the pods — nothing leaves the machine.
cat >"$S/cni/conf/10-agentbox.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "agentbox-k8s", "plugins": [
  {"type": "bridge", "bridge": "abk0", "isGateway": true, "ipMasq": false, "hairpinMode": false,
   "ipam": {"type": "host-local", "dataDir": "$S/ipam", "ranges": [[{"subnet": "10.88.0.0/24"}]]}}]}
CNI
ls /var/run/netns 2>/dev/null | sort >"$S/netns.before" || : >"$S/netns.before"
# The kernel settings the kubelet and the bridge plugin change, to restore.
: >"$S/sysctls"
for k in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward; do
  v=$(sysctl -n "$k" 2>/dev/null) && echo "$k=$v" >>"$S/sysctls"
done
start containerd containerd --config "$S/containerd/config.toml"
wait_for 60 "containerd" ctr --address "$S/containerd.sock" version
for img in pause agentbox; do
  ctr --address "$S/containerd.sock" -n k8s.io images import "$S/images/$img.tar" >/dev/null || die "ctr import $img failed"
done
phase "containerd ready, images imported"

cat >"$S/kubelet.yaml" <<KL
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$node_ip"
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$S/containerd.sock"
podLogsDir: "$S/pod-logs"
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: "$P/ca.crt"}}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$P/kubelet-serving.crt"
tlsPrivateKeyFile: "$P/kubelet-serving.key"
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
resolvConf: ""
KL
start kubelet kubelet --config "$S/kubelet.yaml" --kubeconfig "$S/kubelet.kubeconfig" --root-dir "$S/kubelet" \
  --hostname-override "$node" --node-ip "$node_ip" --v 1
wait_for 180 "node $node Ready" sh -c "kubectl get node $node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
wait_for 60 "default service account" kubectl get serviceaccount default -n default
phase "node Ready"
echo "export KUBECONFIG=$S/admin.kubeconfig PATH=$K:\$PATH"
