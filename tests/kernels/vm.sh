#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Boot a Debian kernel under qemu (TCG) and run one command in it, on this
# machine's own root, for make test-kernels (tests/kernels/matrix.sh).
#
#   vm.sh fetch SERIES        the newest Debian kernel of SERIES (6.1, 6.12) that
#                             apt-cache knows, downloaded and unpacked into the
#                             cache (KERNELS_CACHE, default ~/.cache/xdp-rl/kernels)
#                             unless it is there; prints its folder
#   vm.sh run KDIR JOB CMD... boot the kernel unpacked in KDIR, run CMD (in the
#                             current folder, as root) and exit with its status;
#                             the console goes to JOB/console.log
#
# The guest has no disk. Its init (an initramfs of busybox-static) loads the
# modules 9p needs, mounts this machine's / read-only over virtio-9p, tmpfs
# over /tmp, /run and /var/tmp, then the current folder (read-only) and JOB
# (read-write) at their own paths again, should they be under a tmpfs (a
# clone in /tmp), proc, sys, bpffs and devtmpfs, and runs CMD chrooted
# there: the tests run the very binaries just built, with the host's tools.
# Other modules (veth, nf_tables) load on demand from KDIR through the
# host's modprobe (kernel.modprobe). Paths must not hold spaces (the kernel
# command line carries them).
#
# qemu runs under TCG with one thread (KVM does not run nested here;
# multi-threaded TCG oopses 6.12 in text_poke while XDP programs are swapped),
# bounded by VM_TIMEOUT seconds (default 3200: with the unit runner keeping
# loaded programs between tests, the 6.1 guest ran its suites in 37 minutes,
# 6.12 in 32, sharing the machine; 50 and 39 before), with VM_MEM MiB (2048)
# and VM_CPUS CPUs (2).
set -euo pipefail

CACHE=${KERNELS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xdp-rl/kernels}
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "vm.sh: $*" >&2; exit 1; }

# The newest linux-image-SERIES...-amd64-unsigned of the archive, by version
# (the generic flavour: not -cloud-, not -rt-).
newest() {
	local series=$1
	apt-cache search --names-only "^linux-image-${series//./\\.}[.-]" | awk '{print $1}' |
		grep -E -- '-amd64-unsigned$' | grep -vE -- '-(cloud|rt)-amd64-unsigned$' |
		sort -V | tail -n 1
}

fetch() {
	local series=$1 pkg deb dir kver
	[ "$(dpkg --print-architecture)" = amd64 ] ||
		die "the kernel matrix boots amd64 kernels only (this machine is $(dpkg --print-architecture))"
	pkg=$(newest "$series")
	[ -n "$pkg" ] || die "apt-cache knows no linux-image-$series kernel (run 'apt-get update'?)"
	dir=$CACHE/$pkg
	if [ ! -e "$dir/.ok" ]; then
		mkdir -p "$CACHE"
		rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp"
		(cd "$dir.tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			die "cannot download $pkg with apt-get"
		deb=$(ls "$dir.tmp"/*.deb)
		dpkg-deb -x "$deb" "$dir.tmp/root" && rm -f "$deb"
		kver=$(ls "$dir.tmp/root/lib/modules")
		depmod -b "$dir.tmp/root" "$kver"
		touch "$dir.tmp/.ok" && mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
}

# The initramfs: busybox, the modules 9p needs (unpacked: busybox's insmod
# may not read .ko.xz) in load order, and init.
initramfs() {
	local kdir=$1 out=$2 kver mods tmp m want order=()
	kver=$(ls "$kdir/root/lib/modules")
	mods=$kdir/root/lib/modules/$kver
	ldd /bin/busybox >/dev/null 2>&1 &&
		die "/bin/busybox is linked dynamically: install busybox-static (make deps)"
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	mkdir -p "$tmp"/{bin,dev,proc,sys,host,mods}
	cp /bin/busybox "$tmp/bin/busybox"
	# Each module after the modules it depends on (modinfo's depends).
	add() {
		local name=$1 path dep
		for m in "${order[@]}"; do [ "$m" = "$name" ] && return 0; done
		path=$(find "$mods" -name "$name.ko" -o -name "$name.ko.xz" | head -n 1)
		[ -n "$path" ] || return 0 # built in
		for dep in $(modinfo -F depends "$path" | tr ',' ' '); do add "$dep"; done
		order+=("$name")
		case $path in
		*.xz) xz -dc "$path" >"$tmp/mods/$name.ko" ;;
		*) cp "$path" "$tmp/mods/$name.ko" ;;
		esac
	}
	for want in virtio_pci 9pnet_virtio 9p; do add "$want"; done
	printf '%s\n' "${order[@]}" >"$tmp/mods/order"
	cp "$here/init.sh" "$tmp/init"
	chmod 0755 "$tmp/init"
	(cd "$tmp" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out"
}

run() {
	local kdir=$1 job=$2 kver vmlinuz rc
	shift 2
	[ $# -gt 0 ] || die "run: no command"
	kver=$(ls "$kdir/root/lib/modules")
	vmlinuz=$kdir/root/boot/vmlinuz-$kver
	[ -r "$vmlinuz" ] || die "no kernel image in $kdir"
	mkdir -p "$job"
	job=$(cd "$job" && pwd)
	case "$job$PWD$kdir" in
	*[[:space:]]*) die "a path holds a space: $PWD, $job or $kdir" ;;
	esac
	case $kdir in
	/tmp/* | /run/* | /var/tmp/*)
		die "the kernel's folder $kdir is under a folder the guest mounts anew (set KERNELS_CACHE elsewhere)"
		;;
	esac
	initramfs "$kdir" "$job/initrd.gz"
	# What init runs, and where: written to the shared job folder.
	{
		printf 'cd %q\n' "$PWD"
		printf 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n'
		printf 'export HOME=/tmp CI=%q PYTHONDONTWRITEBYTECODE=1\n' "${CI:-}"
		# What the suites take from the environment.
		for v in MODEL_SECONDS KERNELS_TABLES KERNELS_E2E_TABLES; do
			[ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
		done
		printf '%q ' "$@"
		printf '\n'
	} >"$job/cmd"
	rm -f "$job/rc"
	timeout --foreground -k 10 "${VM_TIMEOUT:-3200}" qemu-system-x86_64 \
		-accel tcg,thread=single -cpu max -smp "${VM_CPUS:-2}" -m "${VM_MEM:-2048}" \
		-nographic -no-reboot -nodefaults -serial "file:$job/console.log" \
		-kernel "$vmlinuz" -initrd "$job/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 xdp_rl.job=$job xdp_rl.mods=$kdir/root xdp_rl.work=$PWD" \
		-fsdev local,id=root,path=/,readonly=on,multidevs=remap,security_model=none \
		-device virtio-9p-pci,fsdev=root,mount_tag=root \
		-fsdev local,id=work,path="$PWD",readonly=on,multidevs=remap,security_model=none \
		-device virtio-9p-pci,fsdev=work,mount_tag=work \
		-fsdev local,id=job,path="$job",multidevs=remap,security_model=none \
		-device virtio-9p-pci,fsdev=job,mount_tag=job \
		</dev/null >/dev/null 2>"$job/qemu.log" || true
	[ -s "$job/rc" ] || die "the guest ended without a result (see $job/console.log)"
	rc=$(cat "$job/rc")
	return "$rc"
}

case ${1:-} in
fetch) [ $# -eq 2 ] || die "usage: vm.sh fetch SERIES"; fetch "$2" ;;
run) [ $# -ge 4 ] || die "usage: vm.sh run KDIR JOB CMD..."; shift; run "$@" ;;
*) echo "usage: vm.sh fetch SERIES | run KDIR JOB CMD..." >&2; exit 2 ;;
esac
