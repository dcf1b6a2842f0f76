#!/bin/bash
# Runs inside the VM matrix's guest (started by agentbox-vm-probe.service,
# read from the 9p share at /mnt/share): installs the agentbox shared in,
# then runs the boundary probe as root and as dev, each from a login
# session made by `runuser -l` (PAM with pam_systemd: a session-N.scope of
# its own under user-UID.slice). Results go to /mnt/share/out/<kernel>/.
set -u
share=/mnt/share
k=$(uname -r)
out=$share/out/$k
mkdir -p "$out"
exec > >(tee "$out/inguest.log" >/dev/console) 2>&1
echo "inguest: kernel $k, $(stat -fc %T /sys/fs/cgroup) on /sys/fs/cgroup, lsm $(cat /sys/kernel/security/lsm 2>/dev/null)"
install -m 0755 "$share/bin/agentbox" "$share/bin/agentbox-helper" "$share/bin/vmprobe" /usr/local/bin/
# dev's lingering user manager is started by logind at boot; wait for it.
for _ in $(seq 120); do
  systemctl is-active -q user@1000.service && break
  sleep 0.5
done
echo "inguest: user@1000.service $(systemctl is-active user@1000.service), linger: $(ls /var/lib/systemd/linger)"
systemd-analyze time 2>/dev/null | head -1
only=$(cat "$share/only" 2>/dev/null || true)
for u in root dev; do
  echo "inguest: $(date +%T) suite as $u"
  runuser -l "$u" -c "/usr/local/bin/vmprobe suite ${only:+-only $only}" >"$out/$u.jsonl" 2>"$out/$u.stderr"
  echo "inguest: $(date +%T) suite as $u: exit $? ($(wc -l <"$out/$u.jsonl") results)"
done
echo done >"$out/done"
sync
