#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# make test-kernels: tests/kernels/suite.sh in each kernel of the matrix, then
# one table of what passed, kernel by table by suite.
#
#   matrix.sh BUILD
#
# KERNELS (default "6.1 6.12 running"): a Debian kernel series is the newest
# linux-image of that series in the archive (vm.sh fetch), booted under qemu
# with this machine's root (vm.sh run); "running" is this machine's own
# kernel, tested natively, first, while the machine is otherwise idle. The
# guests run KERNELS_JOBS at a time (default 2: each takes one CPU).
# Every kernel runs the unit and model suites on both source tables. The
# e2e suite runs on both here, and in a guest on one table, the guests
# taking the tables in turn (6.1: lru, 6.12: buckets): a guest is about
# twenty times slower than this machine, and all of it would not fit
# make test's time (KERNELS_E2E_TABLES, if set, is what every guest runs).
# Logs: BUILD/kernels/NAME/ (console.log, suite/*.log); the table:
# BUILD/kernels/summary. Exit status: 0 if every suite passed on every kernel.
set -uo pipefail

build=$(cd "${1:?usage: matrix.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$build/kernels
kernels=${KERNELS:-6.1 6.12 running}
jobs=${KERNELS_JOBS:-2}
mkdir -p "$out"

for f in "$build/xdp-rl" "$build/test_prog"; do
	[ -x "$f" ] || { echo "matrix.sh: $f is missing (make test-kernels builds it)" >&2; exit 2; }
done

# One guest: boot it and run the suite, the e2e suite on table $3; its
# status in NAME/status.
guest() {
	local kdir=$2 dir=$out/$1
	KERNELS_E2E_TABLES=${KERNELS_E2E_TABLES:-$3} \
		"$here/vm.sh" run "$kdir" "$dir" "$here/suite.sh" "$build" "$dir/suite" \
		>"$dir/vm.log" 2>&1
	echo $? >"$dir/status"
}

pids=()
e2e_turn=(lru buckets)
nguest=0
for k in $kernels; do
	rm -rf "${out:?}/$k" && mkdir -p "$out/$k"
done
# This machine's kernel first, while no guest loads its CPUs.
if [[ " $kernels " == *" running "* ]]; then
	echo "test-kernels: $(uname -r) (this machine's kernel)"
	# This machine's kernel refuses extension programs (EPERM), so libxdp's
	# dispatcher cannot run on it: tests/e2e/test_coexist.py's shared tests
	# skip here, and run in the Debian kernels above.
	SUITE_SKIP_OK="this kernel cannot run libxdp's dispatcher" \
		"$here/suite.sh" "$build" "$out/running/suite" >"$out/running/vm.log" 2>&1
	echo $? >"$out/running/status"
fi
for k in $kernels; do
	[ "$k" = running ] && continue
	dir=$out/$k
	if ! kdir=$("$here/vm.sh" fetch "$k" 2>"$dir/vm.log"); then
		echo 1 >"$dir/status"
		continue
	fi
	echo "test-kernels: $(basename "$kdir") (qemu, TCG)"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	guest "$k" "$kdir" "${e2e_turn[nguest % 2]}" &
	pids+=($!)
	nguest=$((nguest + 1))
done
[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"

# The table, then the failures' logs.
rc=0
{
	printf '%-28s %-8s %-6s %s\n' KERNEL TABLE SUITE RESULT
	for k in $kernels; do
		dir=$out/$k
		release=$k
		[ -r "$dir/suite/kernel" ] && release=$(sed 's/^kernel //' "$dir/suite/kernel")
		if [ ! -s "$dir/suite/results" ]; then
			why=$(tail -n 1 "$dir/vm.log" 2>/dev/null)
			printf '%-28s %-8s %-6s %s\n' "$release" - - "fail  ${why:-no result}"
			continue
		fi
		while read -r table suite status summary; do
			printf '%-28s %-8s %-6s %s  %s\n' "$release" "$table" "$suite" "$status" "$summary"
		done <"$dir/suite/results"
	done
} | tee "$out/summary"
for k in $kernels; do
	dir=$out/$k
	if [ ! -s "$dir/suite/results" ]; then
		rc=1
		for log in "$dir/vm.log" "$dir/console.log" "$dir/out.log"; do
			[ -s "$log" ] && { echo "--- $k: $log (last lines)"; tail -n 25 "$log"; }
		done
		continue
	fi
	[ "$(cat "$dir/status" 2>/dev/null)" = 0 ] || rc=1
	while read -r table suite status _; do
		[ "$status" = pass ] && continue
		rc=1
		echo "--- $k: $dir/suite/$suite-$table.log (last lines)"
		tail -n 25 "$dir/suite/$suite-$table.log"
	done <"$dir/suite/results"
done
if [ $rc -eq 0 ]; then
	echo "test-kernels: every suite passed on every kernel ($out/summary)"
else
	echo "test-kernels: FAILED (logs under $out)" >&2
fi
exit $rc
