#!/usr/bin/env bash
# Builds (once) the guest of the VM matrix (docs/vm.md): a debootstrapped
# Debian bookworm root with systemd on cgroup v2, a regular user dev (uid
# 1000) with a lingering user manager, and two of Debian's kernels — 6.1
# (bookworm's linux-image-amd64) and 6.12 (bookworm-backports) — each with
# an initramfs that mounts the root from a virtio disk.
#
# Everything lands in $AGENTBOX_VM_CACHE/<key> (default /var/cache/agentbox-vm),
# keyed by a hash of this script and the guest files it installs, so a second
# run prints the directory at once. Output (stdout, last line): the directory,
# holding root.img (raw ext4), vmlinuz-<ver>, initrd.img-<ver>, kernels (one
# version a line) and ok. Runs as root. agentbox itself is not in the image:
# scripts/vm/boot.sh shares it in at boot time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AGENTBOX_VM_CACHE:-/var/cache/agentbox-vm}
mirror=${AGENTBOX_VM_MIRROR:-http://deb.debian.org/debian}
key=$(cat "$here/image.sh" "$here"/guest/* | sha256sum | cut -c1-16)
out=$cache/$key
if [ -f "$out/ok" ]; then echo "$out"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "image.sh: must run as root (debootstrap, chroot)" >&2; exit 1; fi

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
root=$work/root
cleanup() {
  for m in dev/pts dev proc sys; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "image.sh: $(date +%T) $*" >&2; }

log "debootstrap bookworm into $root"
nice -n 10 debootstrap --variant=minbase \
  --include=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,kmod,initramfs-tools,git,ca-certificates,procps,util-linux,login,passwd \
  bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }

mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
in_root() { nice -n 10 chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $mirror bookworm-backports main
EOF
# The initramfs only needs to find an ext4 root on a virtio disk: a short
# module list keeps it small (it is unpacked under software emulation).
cat >"$root/etc/initramfs-tools/conf.d/agentbox-vm" <<'EOF'
MODULES=list
COMPRESS=gzip
EOF
printf '%s\n' virtio_pci virtio_blk ext4 crc32c_generic >>"$root/etc/initramfs-tools/modules"

log "installing kernels"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends linux-image-amd64 >/dev/null
# bookworm-backports' linux-image-amd64 depends on the current 6.12 build;
# install that versioned package next to bookworm's 6.1.
k612=$(in_root apt-cache depends -t bookworm-backports linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-6\.12[^ ]*-amd64\)$/\1/p' | head -1)
if [ -z "$k612" ]; then echo "image.sh: no linux-image-6.12 in bookworm-backports" >&2; exit 1; fi
in_root apt-get install -y -qq --no-install-recommends -t bookworm-backports "$k612" >/dev/null
in_root apt-get clean

log "configuring the guest"
echo agentbox-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 agentbox-vm\n' >"$root/etc/hosts"
cat >"$root/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,relatime 0 1
share /mnt/share 9p trans=virtio,version=9p2000.L,msize=524288,nofail,x-systemd.device-timeout=20s 0 0
EOF
mkdir -p "$root/mnt/share"
in_root useradd -m -u 1000 -s /bin/bash dev
in_root passwd -d root >/dev/null
mkdir -p "$root/var/lib/systemd/linger"
touch "$root/var/lib/systemd/linger/dev"
for u in root dev; do
  in_root runuser -u "$u" -- git config --global user.email "$u@agentbox-vm.invalid"
  in_root runuser -u "$u" -- git config --global user.name "$u"
  in_root runuser -u "$u" -- git config --global init.defaultBranch main
done
install -m 0644 "$here/guest/agentbox-vm-probe.service" "$root/etc/systemd/system/"
in_root systemctl enable agentbox-vm-probe.service >/dev/null 2>&1
# Nothing that waits on a network or a clock the guest does not have.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
  systemd-timesyncd.service getty@tty1.service serial-getty@ttyS0.service; do
  in_root systemctl mask "$u" >/dev/null 2>&1 || true
done

ls "$root/lib/modules" >"$work/kernels"
mkdir -p "$work/out"
for v in $(cat "$work/kernels"); do
  cp "$root/boot/vmlinuz-$v" "$root/boot/initrd.img-$v" "$work/out/"
done
cp "$work/kernels" "$work/out/kernels"
for m in dev/pts dev proc sys; do umount -l "$root/$m"; done

log "making root.img"
rm -rf "$root/boot"/*.img-* "$root/var/cache/apt/archives"/*.deb
nice -n 10 mkfs.ext4 -q -L agentbox-vm -d "$root" "$work/out/root.img" 3G
rm -rf "$out"
mv "$work/out" "$out"
touch "$out/ok"
log "done: $(tr '\n' ' ' <"$out/kernels")"
echo "$out"
