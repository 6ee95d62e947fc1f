#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Install every build, test, demo and lint dependency of xdp-rl from Debian
# packages. Idempotent: packages already present are left alone.
#   scripts/deps.sh                   install what is missing (needs root)
#   scripts/deps.sh --check           exit 1 if something is missing, install nothing
#   scripts/deps.sh --check --build   the same, for what `make` needs to build only
#   scripts/deps.sh --check --deb     the same, for what `make deb` needs
# `make` checks (--check --build) and never installs; `make deps`, `make test`,
# `make demo` and `make lint` run this first (see HACKING.md).
set -euo pipefail

# What `make` needs to build build/xdp-rl and the unit tests (python3: the
# BPF object's stack check, scripts/check-stack.py; libssl-dev: the fleet
# agent's TLS to Redis; libxdp-dev: --attach shared, through libxdp's
# dispatcher, whose BPF object comes with libxdp1, its dependency).
BUILD_PKGS=(
	make clang llvm gcc libc6-dev pkg-config python3
	libbpf-dev libxdp-dev libelf-dev zlib1g-dev libcap-dev linux-libc-dev
	libmicrohttpd-dev libssl-dev bpftool
)
# The tests, the demo and the bench; make fuzz (in make test) needs clang's
# libFuzzer and sanitizer runtimes. The fleet's tests run their own Redis
# (redis-server, redis-cli) and nutcracker in namespaces of their own; on a
# host with systemd, installing redis-server also starts Debian's service
# on 127.0.0.1:6379, which the tests do not use. The TLS tests make their
# certificates with openssl (Debian's redis-server is built with TLS).
# tcpdump and tshark read what `xdp-rl capture` writes (tests/e2e/test_capture.py);
# xdp-tools' xdp-filter and xdp-loader share an interface with xdp-rl
# (tests/e2e/test_coexist.py).
RUN_PKGS=(
	iproute2 libcap2-bin util-linux procps
	python3 python3-pytest
	nftables iptables ethtool curl
	libclang-rt-dev
	redis-server redis-tools nutcracker openssl
	tcpdump tshark xdp-tools
)
# make test-kernels (tests/kernels): Debian's kernels booted under qemu, with
# an initramfs of busybox (the static one: the initramfs has no libc) and
# the modules 9p needs (kmod to read them, xz to unpack 6.12's).
KERNEL_PKGS=(
	qemu-system-x86 busybox-static cpio kmod xz-utils
)
# make deb (debian/): debhelper, and lintian, which the tests run on it.
DEB_PKGS=(
	debhelper dpkg-dev fakeroot lintian
)
# The tests of what an operator installs: scdoc makes the man page again
# (make check-man), man and groff render it, systemd-analyze verifies the
# units, bash-completion is what the completion is written for.
DOC_PKGS=(
	scdoc man-db groff-base systemd bash-completion
)
# make lint: clang-tools gives scan-build (a perl script), git the file list.
LINT_PKGS=(
	clang-format clang-tools perl cppcheck shellcheck git
)

check=0 build=0 deb=0
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	--build) build=1 ;;
	--deb) deb=1 ;;
	*) echo "usage: $0 [--check [--build | --deb]]" >&2; exit 2 ;;
	esac
done
if [ "$build" -eq 1 ]; then
	PKGS=("${BUILD_PKGS[@]}")
elif [ "$deb" -eq 1 ]; then
	PKGS=("${BUILD_PKGS[@]}" "${DEB_PKGS[@]}")
else
	PKGS=("${BUILD_PKGS[@]}" "${RUN_PKGS[@]}" "${KERNEL_PKGS[@]}" "${DEB_PKGS[@]}"
		"${DOC_PKGS[@]}" "${LINT_PKGS[@]}")
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

if [ "$check" -eq 1 ]; then
	[ ${#missing[@]} -eq 0 ] || { echo "missing: ${missing[*]}"; exit 1; }
	exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: these packages are missing: ${missing[*]}" >&2
	echo "deps.sh: run 'sudo scripts/deps.sh' (or 'sudo make deps') to install them" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
