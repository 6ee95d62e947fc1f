#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The cost goals (README, "What it costs"), judged on one `make bench` run.

    scripts/bench_goals.py KERN_JSON E2E_JSON     (scripts/bench.sh runs it)

KERN_JSON is part 1's raw data (bench_prog kern --json), E2E_JSON part 2's
(bench_e2e.py --out). Every figure is taken from those files, within the
run: a ratio of two programs measured in the same round, or a difference
in the same run, its median and its range over the runs as the parts
themselves trim them. Prints one table; exits 0 whether or not a goal
holds (the table says which).
"""
import json
import sys


def trimmed(values, cut):
    """Median and range of @values, the @cut lowest and highest left out."""
    s = sorted(values)
    if len(s) > 2 * cut:
        s = s[cut:len(s) - cut]
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return med, s[0], s[-1]


def kern_row(kern, name):
    for rec in kern:
        if rec.get("section") == "kern_steady" and rec.get("scenario") == name:
            return rec
    raise KeyError(f"part 1 has no steady row '{name}'")


def kern_diff(rec, a, b):
    """Per run, program @a's ns/pkt less @b's: the median and range (part 1 trims a fifth)."""
    ra, rb = rec["raw_kern_ns"][a], rec["raw_kern_ns"][b]
    d = [x - y for x, y in zip(ra, rb)]
    return trimmed(d, len(d) // 5)


def e2e_ratio(e2e, case):
    """x bare XDP_DROP per frame, same round: median and range (part 2 trims 2 each side)."""
    rounds = e2e["per_round"][case]
    return trimmed([r["ratio"] for r in rounds.values()], 2)


def free_limiter(e2e, case):
    """x bare XDP_DROP per frame of a limiter that costs nothing and passes
    what @case passed: its passed frames at 'all to the stack''s CPU per
    frame, the rest at bare XDP_DROP's, round by round."""
    by = e2e["per_round"]
    got = []
    for rnd, x in by[case].items():
        drop, pas = by["xdp_drop"].get(rnd), by["xdp_pass"].get(rnd)
        if not (drop and pas and x["frames"]):
            continue
        d, p = drop["cpu_per_frame"], pas["cpu_per_frame"]
        got.append((x["passed"] * p + (x["frames"] - x["passed"]) * d) / (x["frames"] * d))
    return trimmed(got, 2)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        kern = json.load(f)
    with open(argv[2]) as f:
        e2e = json.load(f)
    rows = []

    def ratio_row(what, got, goal):
        med, lo, hi = got
        rows.append((what, f"{med:.2f}x [{lo:.2f}..{hi:.2f}]", f"<= {goal:.2f}x",
                     "holds" if med <= goal else "not yet"))

    def ns_row(what, got, goal):
        med, lo, hi = got
        rows.append((what, f"{med:+.0f} ns [{lo:+.0f}..{hi:+.0f}]", f"<= {goal:+.0f} ns",
                     "holds" if med <= goal else "not yet"))

    def info_row(what, got, spec, unit):
        """A figure that explains the goal above it; @spec formats each number."""
        med, lo, hi = (format(x, spec) for x in got)
        rows.append((what, f"{med}{unit} [{lo}..{hi}]", "", ""))

    def over_row(what, case, floor):
        """@case's CPU per frame over @floor's, round by round (part 2 trims 2 each side)."""
        a, f = e2e["per_round"][case], e2e["per_round"][floor]
        info_row(what, trimmed([a[k]["cpu_per_frame"] / f[k]["cpu_per_frame"]
                                for k in a if k in f], 2), ".2f", "x")

    ratio_row("e2e, 4 096 sources over their limit, CPU per frame x bare XDP_DROP",
              e2e_ratio(e2e, "xdp_rl"), 1.10)
    if "xdp_pass" in e2e["per_round"]:
        # The frames the limit passes go on to the stack, each costing what
        # 'all to the stack' costs per frame: a limiter that cost nothing would
        # still pay that, over a drop, for each frame xdp-rl passed.
        info_row("  a limiter costing nothing, passing what xdp-rl passed",
                 free_limiter(e2e, "xdp_rl"), ".2f", "x")
    if "line_floor" in e2e["per_round"]:
        # The floor of any exact per-source limiter: one line per source, same round.
        info_row("  one line per source (the floor) x bare XDP_DROP",
                 e2e_ratio(e2e, "line_floor"), ".2f", "x")
        over_row("  xdp-rl over that floor, same round", "xdp_rl", "line_floor")
    r = kern_row(kern, "IPv4 100 000, 1 CPU")
    ns_row("in kernel, 100 000 sources: dropping less passing, per run",
           kern_diff(r, "xdp_rl_drop", "xdp_rl_pass"), 0)
    r = kern_row(kern, "IPv4 1 000 000, 1 CPU")
    ns_row("in kernel, 1 000 000 sources: dropping over bare XDP_DROP",
           kern_diff(r, "xdp_rl_drop", "bare_drop"), 200)
    if "line_floor_long_drop" in r["raw_kern_ns"]:
        # One line per source in a program as long as xdp-rl's (part 1's '1 line, long').
        info_row("  one line per source, as long a program, over bare XDP_DROP",
                 kern_diff(r, "line_floor_long_drop", "bare_drop"), "+.0f", " ns")
        info_row("  xdp-rl over that floor, per run",
                 kern_diff(r, "xdp_rl_drop", "line_floor_long_drop"), "+.0f", " ns")
    ratio_row("e2e, --table lru, CPU per frame x bare XDP_DROP",
              e2e_ratio(e2e, "xdp_rl_lru"), 1.35)
    if "plain_lru" in e2e["per_round"]:
        # The kernel's LRU hash with one add per packet and the ns clock, same round.
        over_row("  over the plain LRU-hash limiter (ns clock), same round",
                 "xdp_rl_lru", "plain_lru")
        info_row("  the plain LRU-hash limiter x bare XDP_DROP", e2e_ratio(e2e, "plain_lru"),
                 ".2f", "x")
    head = ("goal (issue 27)", "this run: median [range]", "goal", "")
    w = [max(len(x[i]) for x in rows + [head]) for i in range(4)]
    for row in [head] + rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(row)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
