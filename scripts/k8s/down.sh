#!/usr/bin/env bash
# Tears down what up.sh STATE_DIR started, and only that: the pods' tasks
# and shims (their PIDs from containerd's state), the cluster's processes
# by the PIDs in STATE/pids, every mount under STATE and the pods' network
# namespaces containerd made, the abk0 bridge, the kernel settings the
# kubelet and the bridge plugin changed (restored from STATE/sysctls), the
# kubelet's cgroups. Then removes STATE. Safe to run twice.
set -uo pipefail
S=${1:?usage: down.sh STATE_DIR}
[ -d "$S" ] || exit 0
t0=$(date +%s)
step() { echo "down.sh: +$(( $(date +%s) - t0 ))s $*" >&2; }
# stop PIDFILE...: SIGTERM, then SIGKILL after 10s; by PID only.
stop() {
  local f pid pids=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && { kill -TERM "$pid" 2>/dev/null; pids+=("$pid"); }
  done
  local end=$(( $(date +%s) + 10 ))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
}
stop "$S/pids/kubelet"
step "kubelet stopped"
# The pods' processes: everything in the kubelet's kubepods cgroups (the
# pods this cluster ran), then the shims containerd started for them —
# found by the socket under STATE their command lines name, so only ours.
for f in $(find /sys/fs/cgroup/pids/kubepods /sys/fs/cgroup/memory/kubepods -name cgroup.procs 2>/dev/null); do
  for pid in $(cat "$f" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
done
mkdir -p "$S/pids/shims"
for p in /proc/[0-9]*; do
  if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "-address $S/containerd.sock"; then
    echo "${p#/proc/}" >"$S/pids/shims/${p#/proc/}"
  fi
done
stop "$S"/pids/shims/*
step "pods and shims stopped"
stop "$S/pids/containerd" "$S/pids/kube-scheduler" "$S/pids/kube-controller-manager"
stop "$S/pids/kube-apiserver"
stop "$S/pids/etcd"
step "control plane and containerd stopped"
# Mounts under the state directory, deepest first.
awk -v s="$S/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
step "unmounted"
# The pods' network namespaces (containerd's, named cni-*), new since up.sh.
if [ -f "$S/netns.before" ]; then
  for n in $(ls /var/run/netns 2>/dev/null | sort | comm -13 "$S/netns.before" -); do
    case $n in cni-*) umount "/var/run/netns/$n" 2>/dev/null; rm -f "/var/run/netns/$n" ;; esac
  done
fi
ip link show abk0 >/dev/null 2>&1 && ip link delete abk0
if [ -f "$S/sysctls" ]; then
  while IFS== read -r k v; do [ -n "$k" ] && sysctl -q -w "$k=$v" >/dev/null; done <"$S/sysctls"
fi
# The kubelet's cgroups (cgroupfs driver): the kubepods tree in each v1
# hierarchy, leaves first (empty once the pods are gone).
for h in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
done
step "network and kernel settings restored, cgroups removed"
rm -rf "$S"
step "done"
