#!/usr/bin/env bash
# Install every build, test and demo dependency of xdp-rl from Debian packages.
# Idempotent: packages already present are left alone.
#   scripts/deps.sh           install what is missing (needs root)
#   scripts/deps.sh --check   exit 1 if something is missing, install nothing
set -euo pipefail

PKGS=(
	make clang llvm gcc libc6-dev pkg-config
	libbpf-dev libelf-dev zlib1g-dev libcap-dev linux-libc-dev
	bpftool iproute2 libcap2-bin util-linux procps
	python3 python3-pytest
	nftables iptables ethtool
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

if [ "${1:-}" = "--check" ]; then
	[ ${#missing[@]} -eq 0 ] || { echo "missing: ${missing[*]}"; exit 1; }
	exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: these packages are missing: ${missing[*]}" >&2
	echo "deps.sh: run 'sudo scripts/deps.sh' (or 'sudo make ...') to install them" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
