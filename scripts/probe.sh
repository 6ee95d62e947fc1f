#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What a goal of the Makefile needs, found by the tools and headers
# themselves, whatever installed them (a distribution's packages, a build
# from source): nothing here knows a package name, and nothing is installed.
#   scripts/probe.sh build    the compilers, bpftool, the libraries' headers
#   scripts/probe.sh lint     make lint's tools
# Prints "missing: WHAT (WHY), ..." and exits 1 if something is missing.
# CC, CLANG, BPFTOOL, LLVM_OBJDUMP, PYTHON, CLANG_FORMAT, SCAN_BUILD, CPPCHECK
# and SHELLCHECK name the tools as the Makefile does.
set -uo pipefail

missing=()

# A command: the first of $2.. found on PATH, else missing ($1 says why).
need_tool() {
	local why=$1 t
	shift
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 && return 0
	done
	missing+=("$1 ($why)")
}

# A header the C compiler finds (and, with $3, a library it links).
need_header() {
	local header=$1 why=$2 lib=${3:-} src
	src=$(printf '#include <%s>\nint main(void) { return 0; }\n' "$header")
	if ! printf '%s' "$src" | ${CC:-cc} -x c - -o /dev/null ${lib:+-l"$lib"} >/dev/null 2>&1; then
		missing+=("<$header>${lib:+ and -l$lib} ($why)")
	fi
}

case ${1:-} in
build)
	need_tool "the C compiler" "${CC:-cc}"
	need_tool "the BPF compiler" "${CLANG:-clang}"
	need_tool "the BPF skeletons" "${BPFTOOL:-bpftool}"
	need_tool "the BPF object's stack check" "${LLVM_OBJDUMP:-llvm-objdump}" llvm-objdump-14
	need_tool "the BPF object's stack check" "${PYTHON:-python3}"
	need_tool "the build" make
	if command -v "${CLANG:-clang}" >/dev/null 2>&1 &&
		! "${CLANG:-clang}" -print-targets 2>/dev/null | grep -qw bpf; then
		missing+=("${CLANG:-clang} with the bpf target (the BPF compiler)")
	fi
	need_header linux/bpf.h "the kernel's UAPI headers"
	need_header bpf/libbpf.h "libbpf 1.0 or later" bpf
	need_header xdp/libxdp.h "libxdp, for --attach shared" xdp
	need_header libelf.h "libelf, which libbpf needs" elf
	need_header zlib.h "zlib, which libbpf needs" z
	need_header sys/capability.h "libcap" cap
	need_header microhttpd.h "libmicrohttpd, the exporter's HTTP server" microhttpd
	need_header openssl/ssl.h "OpenSSL, the fleet agent's TLS" ssl
	need_header openssl/crypto.h "OpenSSL, the fleet agent's TLS" crypto
	;;
lint)
	need_tool "make lint-format" "${CLANG_FORMAT:-clang-format}" clang-format-14
	need_tool "make lint-scan" "${SCAN_BUILD:-scan-build}" scan-build-14
	need_tool "make lint-cppcheck" "${CPPCHECK:-cppcheck}"
	need_tool "make lint-shell" "${SHELLCHECK:-shellcheck}"
	need_tool "the file list" git
	;;
*)
	echo "usage: $0 build|lint" >&2
	exit 2
	;;
esac

if [ ${#missing[@]} -ne 0 ]; then
	line="missing: ${missing[0]}"
	for m in "${missing[@]:1}"; do
		line+=", $m"
	done
	echo "$line"
	exit 1
fi
