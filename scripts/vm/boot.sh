#!/usr/bin/env bash
# Boots the VM matrix's guest once, with one kernel, under software-emulated
# QEMU (-accel tcg: CI has no KVM), and waits for it to power off.
#
#   scripts/vm/boot.sh IMAGE_DIR KERNEL_VERSION SHARE_DIR [TIMEOUT_SECONDS]
#
# IMAGE_DIR is what scripts/vm/image.sh printed. SHARE_DIR is shared in
# read-write over virtio-9p (mount tag share, /mnt/share in the guest): it
# holds inguest.sh and bin/{agentbox,agentbox-helper,vmprobe}; the guest
# writes out/<kernel>/ there. The root disk is opened with snapshot=on, so the
# cached image is never changed. The serial console goes to
# SHARE_DIR/console-<kernel>.log. Past TIMEOUT_SECONDS (default 900) QEMU is
# killed and the script exits 124. AGENTBOX_VM_ACCEL=kvm uses KVM instead.
set -euo pipefail
img=$1 k=$2 share=$3 limit=${4:-900}
accel=${AGENTBOX_VM_ACCEL:-tcg}
if ! command -v qemu-system-x86_64 >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-x86 >/dev/null
fi
cpu=max
[ "$accel" = kvm ] && cpu=host
console=$share/console-$k.log
rc=0
timeout --kill-after=10 "$limit" nice -n 10 qemu-system-x86_64 \
  -accel "$accel" -cpu "$cpu" -m "${AGENTBOX_VM_MEM:-2048}" -smp "${AGENTBOX_VM_CPUS:-2}" \
  -nodefaults -no-reboot -display none -monitor none \
  -serial "file:$console" \
  -kernel "$img/vmlinuz-$k" -initrd "$img/initrd.img-$k" \
  -append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1 mitigations=off quiet loglevel=4 systemd.show_status=error" \
  -drive "file=$img/root.img,format=raw,if=virtio,snapshot=on" \
  -virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
  -device virtio-rng-pci || rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "boot.sh: $k: no power-off within ${limit}s; QEMU killed (console: $console)" >&2
  exit 124
fi
exit "$rc"
