#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What make test-kernels runs in each kernel of the matrix (in a vm.sh guest,
# or on this machine for its own kernel), on each source table:
#
#   unit   build/test_prog without the model test (BPF_PROG_TEST_RUN tables)
#   model  the model test for MODEL_SECONDS (default 5)
#   e2e    the end-to-end tests marked `kernels` (pytest -m kernels): load,
#          packets through a limit, set, rules, reset, charge, unload, in
#          namespaces over veth, on KERNELS_E2E_TABLES (default: every
#          table); those also marked kernels_one_table (the dispatcher, a
#          load killed at each step) on the first of them alone
#
#   suite.sh BUILD OUT     BUILD: the build folder (build/xdp-rl, test_prog);
#                          OUT: a folder for the logs and OUT/results, one
#                          line per table and suite: TABLE SUITE pass|fail SUMMARY
# Exit status: 0 if every suite passed.
set -uo pipefail

build=${1:?usage: suite.sh BUILD OUT}
out=${2:?usage: suite.sh BUILD OUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tables=${KERNELS_TABLES:-buckets lru}
# The tables the e2e suite runs on (default: all of the above).
e2e_tables=${KERNELS_E2E_TABLES:-$tables}
mkdir -p "$out"
results=$out/results
: >"$results"
echo "kernel $(uname -r)" >"$out/kernel"

# record TABLE SUITE STATUS LOG SUMMARY
record() {
	printf '%s %s %s %s\n' "$1" "$2" "$3" "$4" >>"$results"
	printf '%-8s %-6s %s  %s\n' "$1" "$2" "$3" "$4"
}

rc=0
unit_names=$("$build/test_prog" --list | grep -vx model | tr '\n' ' ')
for t in $tables; do
	export XDP_RL_TEST_TABLE=$t XDP_RL_E2E_TABLE=$t
	# shellcheck disable=SC2086
	"$build/test_prog" $unit_names >"$out/unit-$t.log" 2>&1
	s=$?
	sum=$(grep -E '^[0-9]+ passed' "$out/unit-$t.log" | tail -n 1)
	record "$t" unit "$([ $s -eq 0 ] && echo pass || echo fail)" "${sum:-no summary (exit $s)}"
	[ $s -eq 0 ] || rc=1

	XDP_RL_MODEL_SECONDS=${MODEL_SECONDS:-5} "$build/test_prog" model >"$out/model-$t.log" 2>&1
	s=$?
	sum=$(grep -E '^[0-9]+ passed' "$out/model-$t.log" | tail -n 1)
	record "$t" model "$([ $s -eq 0 ] && echo pass || echo fail)" \
		"${sum:-no summary (exit $s)}, ${MODEL_SECONDS:-5} s"
	[ $s -eq 0 ] || rc=1

	case " $e2e_tables " in
	*" $t "*) ;;
	*) continue ;;
	esac
	# The tests marked kernels, on this table (their ids name it); those
	# marked kernels_one_table on the first table alone.
	marks=kernels
	[ "$t" = "${e2e_tables%% *}" ] || marks="kernels and not kernels_one_table"
	XDP_RL_BUILD=$build /usr/bin/python3 -m pytest -p no:cacheprovider -q -rs -m "$marks" \
		-k "$t" --rootdir "$root" "$root/tests/e2e" >"$out/e2e-$t.log" 2>&1
	s=$?
	sum=$(grep -E '(passed|failed|error|skipped)' "$out/e2e-$t.log" | tail -n 1 | tr -d '=' |
		sed 's/^ *//; s/ in [0-9.]*s.*//')
	# A skip is a failure here: every kernel of the matrix must run them. But
	# SUITE_SKIP_OK: a reason a skip may give on this kernel (matrix.sh sets
	# it for this machine's own, which cannot run libxdp's dispatcher: the
	# Debian kernels run those tests); every skip must give it.
	case $sum in
	*skipped*)
		if [ -z "${SUITE_SKIP_OK:-}" ] ||
			grep -E '^SKIPPED ' "$out/e2e-$t.log" | grep -vqF "$SUITE_SKIP_OK"; then
			s=1
		else
			sum="$sum (each: $SUITE_SKIP_OK)"
		fi
		;;
	esac
	record "$t" e2e "$([ $s -eq 0 ] && echo pass || echo fail)" "${sum:-no summary (exit $s)}"
	[ $s -eq 0 ] || rc=1
done
exit $rc
