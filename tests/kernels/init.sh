#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# PID 1 of a vm.sh guest: mount this machine's root (9p, read-only) and the
# job folder (9p, read-write, at its own path), run the job's command
# chrooted there, write its exit status to JOB/rc, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

say() { echo "init: $*" >/dev/console; }

while read -r m; do
	insmod "/mods/$m.ko" || say "cannot load module $m"
done </mods/order
job='' mods='' work=''
# shellcheck disable=SC2013 # the command line is one line of words
for w in $(cat /proc/cmdline); do
	case $w in
	xdp_rl.job=*) job=${w#*=} ;;
	xdp_rl.mods=*) mods=${w#*=} ;;
	xdp_rl.work=*) work=${w#*=} ;;
	esac
done
opts=trans=virtio,version=9p2000.L,msize=262144,cache=loose
if ! mount -t 9p -o "$opts,ro" root /host; then
	say "cannot mount the host's root over 9p"
	poweroff -f
fi
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t bpf bpf /host/sys/fs/bpf
for d in /tmp /run /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "/host$d"; done
# Last, the folder the command runs in and the job folder: either may be
# under one of those (a clone in /tmp).
mkdir -p "/host$work" "/host$job"
if ! mount -t 9p -o "$opts,ro" work "/host$work" || ! mount -t 9p -o "$opts" job "/host$job"; then
	say "cannot mount the working folder or the job folder over 9p"
	poweroff -f
fi
# Modules the tests need (veth, nf_tables, ...) from the kernel's own package.
printf '#!/bin/sh\nexec chroot /host /sbin/modprobe -d %s "$@"\n' "$mods" >/modprobe
chmod 0755 /modprobe
echo /modprobe >/proc/sys/kernel/modprobe
ip link set lo up

chroot /host /bin/sh -c ". '$job/cmd'" >"/host$job/out.log" 2>&1
echo $? >"/host$job/rc"
sync
umount "/host$job"
poweroff -f
