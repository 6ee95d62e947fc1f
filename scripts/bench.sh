#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# make bench: what xdp-rl costs per packet against the XDP hook's floor, a
# plain reference limiter, nftables and iptables, its map memory, the fleet
# agent's rounds, what a capture and --ban cost the datapath, what a
# rate (--rate) costs against a fixed window and the kernel's token buckets,
# and what a --key beyond the source costs; then the cost goals, judged on
# this run.
#
#   scripts/bench.sh [BUILD]      (make bench; needs root)
#
# Prints its tables and writes them to BUILD/bench/results.txt (raw data
# beside it: kern.json, e2e.json, e2e.jsonl, mem.json, fleet.jsonl,
# capture.json, ban.json, rate.json, rate_e2e.json(l), keys.json), then puts
# each part's tables in doc/costs.md
# between its markers (scripts/bench_doc.py), with the run's date, commit
# and machine, and the goals (part 9: parts 1 and 2 both run) in README.md.
# Timings are only measured, never asserted; make test does not run this.
#
#   BENCH_QUICK=1           a smoke run: fewer scenarios, runs and rounds;
#                           doc/costs.md is left alone
#   BENCH_DOC=0|1           write doc/costs.md or not (default: 1, 0 with BENCH_QUICK=1)
#   BENCH_E2E_ROUNDS=N      end-to-end rounds (default 11)
#   BENCH_E2E_SECONDS=S     seconds of flood per case and round (default 1)
#   BENCH_FLEET_SECONDS=S   seconds of the fleet agent's rounds measured per case (default 5)
#   BENCH_RATE_ROUNDS=N     end-to-end rounds of part 7 (default 7)
#   BENCH_PARTS="..."       the parts to run, of kern e2e mem fleet capture ban rate keys (default: all;
#                           part 9, the goals, comes with kern and e2e together);
#                           with some left out, the run's date, commit and machine go into
#                           each part run, and doc/costs.md keeps the other parts and its
#                           'run' lines as they were (e.g. BENCH_PARTS=capture: part 5 alone,
#                           under a minute; BENCH_PARTS=ban: part 6 alone, about a minute;
#                           BENCH_PARTS=rate: part 7 alone, about three minutes;
#                           BENCH_PARTS=keys: part 8 alone, about a minute)
#
# The end-to-end part makes two namespaces with scripts/testbed.sh and always
# removes them; its traffic stays inside them (sources in 198.19.0.0/16).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../build}")
out=$build/bench
bp=$out/bench_prog
bin=$build/xdp-rl
py=/usr/bin/python3
results=$out/results.txt
tmp=$results.tmp

for f in "$bp" "$bin"; do
	[ -x "$f" ] || { echo "bench.sh: $f is missing: run 'make bench'" >&2; exit 1; }
done

quick=${BENCH_QUICK:-0}
rounds=${BENCH_E2E_ROUNDS:-11}
secs=${BENCH_E2E_SECONDS:-1}
kern_args=(--json "$out/kern.json")
cap_args=(--json "$out/capture.json")
ban_args=(--json "$out/ban.json")
rate_args=(--json "$out/rate.json")
rate_rounds=${BENCH_RATE_ROUNDS:-7}
keys_args=(--json "$out/keys.json")
if [ "$quick" = 1 ]; then
	kern_args+=(--quick --runs 3)
	cap_args+=(--runs 3)
	ban_args+=(--quick --runs 3)
	rate_args+=(--quick --runs 3)
	keys_args+=(--quick --runs 3)
	rounds=${BENCH_E2E_ROUNDS:-1}
	rate_rounds=${BENCH_RATE_ROUNDS:-1}
fi
all_parts="kern e2e mem fleet capture ban rate keys"
parts=${BENCH_PARTS:-$all_parts}
for p in $parts; do
	case " $all_parts " in
	*" $p "*) ;;
	*) echo "bench.sh: unknown part '$p' in BENCH_PARTS (of: $all_parts)" >&2; exit 2 ;;
	esac
done
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

tag=bench$$
tag=${tag:0:12}
cleanup() { "$here/testbed.sh" down "$tag" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

: >"$tmp"
say() { printf '%s\n' "$*" | tee -a "$tmp"; }
# Each part is bounded in time; timeout signals only the child it started.
part() { local limit=$1; shift; timeout --foreground "$limit" "$@" | tee -a "$tmp"; }

start=$(date +%s)
run_lines() {
	say "xdp-rl bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo '?')"
	say "kernel $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	say "A shared VM: its speed drifts (steal, a busy host); every figure below is a median over runs with its spread, and every comparison is made within one run."
}
# A part's title; when not every part runs, this run's date, commit and machine with it.
title() {
	say ""
	say "$1"
	[ "$parts" = "$all_parts" ] || run_lines
}
[ "$parts" = "$all_parts" ] && run_lines

if want kern; then
title "== 1. In-kernel cost per packet: BPF_PROG_TEST_RUN with repeat (the kernel's own duration), one 64-byte frame"
say "Every program runs behind the same wrapper (it rewrites the source address to the next of N, then tail-calls it); (d) is ns/pkt minus bare"
say "XDP_DROP in the same run. Steady state: every source already has an open 1 h window; 'dropping' = limit 1, 'passing' = limit max."
say "'dropping, apart' = the same xdp-rl dropping with every drop counted apart in the hot entries (cfg_hot_after 0), as before a window's first"
say "4096 drops went into its count (bpf/hot.h): what that bought is the difference from 'xdp-rl dropping'. plain/xdp-rl = plain reference's (d) over"
say "xdp-rl's (| the same for ns/pkt with the floor). '1 line/source' = the floor of any exact per-source limiter (bare.bpf.c bare_line): the header read,"
say "one 64-byte line per source in an array of as many lines as xdp-rl's table has sources, one atomic add, no clock: what xdp-rl costs over it is its own."
say "'1 line, long' = the same made about as long as xdp-rl's program with 1 000 sources (bare_line_long: arithmetic on the add's result, after it): with many"
say "sources a program that short overlaps one packet's miss with the next's, which a longer one cannot: roughly what one line per source costs a program"
say "of xdp-rl's length. Fresh tables: N new sources through empty tables (every packet an insert), then the same N again."
say "Runs of 250 000 packets (fresh: one pass over the N sources), sources visited in an order unrelated to their order in memory;"
say "11 runs steady, 7 fresh, program order reversed every other run; after the steady table, one window every CPU charges, on 1 and 2 CPUs (its own note);"
say "median [range] after trimming the lowest and highest fifth. Sources: IPv4 198.18.0.0/15 (240.0.0.0/4 above 131 072), IPv6 2001:2::/96 (/128 keys)."
part 1200 "$bp" kern "${kern_args[@]}"
fi

if want e2e || want mem || want fleet || want rate; then
	read -r rx tx rx_if tx_if rx_mac < <("$here/testbed.sh" up "$tag")
fi

if want e2e; then
title "== 2. End to end: a flood through a veth pair into a namespace, generated in the kernel (BPF_F_TEST_XDP_LIVE_FRAMES + bpf_redirect)"
part 900 "$py" "$here/bench_e2e.py" --rx "$rx" --tx "$tx" --rx-if "$rx_if" --tx-if "$tx_if" \
	--mac "$rx_mac" --bench-prog "$bp" --xdp-rl "$bin" --out "$out/e2e" \
	--rounds "$rounds" --seconds "$secs"
fi

if want mem; then
title "== 3. Map memory per tracked source: the kernel's accounting (memlock in fdinfo, as 'bpftool map show')"
part 120 "$bp" mem --json "$out/mem.json"
# Cross-check on a limiter loaded by the real CLI; last, src4 under a key with a port (wide).
for spec in "262144 buckets src" "262144 lru src" "1000000 buckets src" "1000000 lru src" \
	"262144 buckets src,dport"; do
	read -r n table key <<<"$spec"
	"$bin" -n "$rx" load "$rx_if" --max-sources "$n" --table "$table" --key "$key" >/dev/null
	prog=$("$bin" -n "$rx" status "$rx_if" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["limiters"][0]["prog_id"])')
	part 60 "$py" - "$prog" "$n" "$table" "$key" <<'EOF'
import json, subprocess, sys
prog, n, table, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ids = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", prog], check=True,
                                capture_output=True, text=True).stdout)["map_ids"]
maps = [json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(i)], check=True,
                                  capture_output=True, text=True).stdout) for i in ids]
src = {m["name"]: m for m in maps if m["name"] in ("src4", "src6")}
# Per source: per --max-sources (the bucket table's entries are buckets, an LRU table's elements).
print("  check: 'xdp-rl load --max-sources %d --table %s%s', bpftool map show: "
      % (n, table, "" if key == "src" else " --key " + key) + ", ".join(
    "%s %d B (%.1f B/source)" % (k, src[k]["bytes_memlock"], src[k]["bytes_memlock"] / n)
    for k in sorted(src)) + ", all %d maps %d B" % (len(maps), sum(m["bytes_memlock"] for m in maps)))
EOF
	"$bin" -n "$rx" unload "$rx_if" >/dev/null
done
fi

if want fleet; then
title "== 4. The fleet agent (xdp-rl fleet): its cost per sync round, with 1 000 and 100 000 active sources, on either table"
say "A redis-server on the receiver namespace's own 127.0.0.1; sources made active by the in-kernel flood (one CPU),"
say "windows of an hour under a limit none reaches, --sync-above 0 (every open window a candidate). 'flooding': the flood goes on,"
say "so every window has new counts each round (INCRBY); 'idle': nothing new (GET). CPU: on-CPU time (schedstat) per round."
fleet_args=(--seconds "${BENCH_FLEET_SECONDS:-5}")
[ "$quick" = 1 ] && fleet_args+=(--quick)
if command -v redis-server >/dev/null; then
	part 600 "$py" "$here/bench_fleet.py" --rx "$rx" --tx "$tx" --rx-if "$rx_if" --tx-if "$tx_if" \
		--mac "$rx_mac" --bench-prog "$bp" --xdp-rl "$bin" --out "$out/fleet" "${fleet_args[@]}"
else
	say "  skipped: redis-server is not installed (scripts/deps.sh installs it)"
fi
fi

if want capture; then
title "== 5. What 'xdp-rl capture' costs the datapath: in the kernel, BPF_PROG_TEST_RUN through part 1's wrapper, one 64-byte frame"
part 300 "$bp" capture "${cap_args[@]}"
fi

if want ban; then
title "== 6. What --ban costs the datapath: in the kernel, BPF_PROG_TEST_RUN through part 1's wrapper, one 64-byte frame"
part 600 "$bp" ban "${ban_args[@]}"
fi

if want rate; then
title "== 7. What a rate (--rate N/DUR --burst B) costs against a fixed window: in the kernel, BPF_PROG_TEST_RUN through part 1's wrapper, one 64-byte frame; then end to end, against nft's limit and hashlimit of the same rate and burst"
part 600 "$bp" rate "${rate_args[@]}"
say ""
say "End to end, as part 2 (its flood, its columns), the rate beside the fixed window, nft's limit and hashlimit:"
part 600 "$py" "$here/bench_e2e.py" --rx "$rx" --tx "$tx" --rx-if "$rx_if" --tx-if "$tx_if" \
	--mac "$rx_mac" --bench-prog "$bp" --xdp-rl "$bin" --out "$out/rate_e2e" \
	--rounds "$rate_rounds" --seconds "$secs" \
	--cases xdp_drop,xdp_pass,xdp_rl,xdp_rl_rate,nft_ingress,ipt_hashlimit
fi

if want keys; then
title "== 8. What a key beyond the source costs (--key src,dport, dst, dst,dport against src): in the kernel, BPF_PROG_TEST_RUN through part 1's wrapper (walking the key's address), one 64-byte frame"
part 600 "$bp" keys "${keys_args[@]}"
fi

# The goals need this run's parts 1 and 2 (every figure a ratio or difference within it).
if want kern && want e2e; then
title "== 9. The cost goals (README, 'What it costs'), judged on parts 1 and 2 of this run"
part 60 "$py" "$here/bench_goals.py" "$out/kern.json" "$out/e2e.json"
fi

say ""
say "make bench took $(( $(date +%s) - start )) s"
mv "$tmp" "$results"
echo "(written to $results)"
if [ "${BENCH_DOC:-$([ "$quick" = 1 ] && echo 0 || echo 1)}" = 1 ]; then
	"$py" "$here/bench_doc.py" "$results" "$here/../doc/costs.md"
	"$py" "$here/bench_doc.py" "$results" "$here/../README.md" goals
fi
