#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""make bench, part 2: a flood from many sources through a veth pair, end to end.

Run by scripts/bench.sh, which makes the namespaces (scripts/testbed.sh) and
always removes them. Every round runs the same flood against each case in
turn, on a receiving veth that is otherwise left bare; the order of the cases
rotates from round to round, and each case is set up fresh (empty tables).

The flood: build/bench/bench_prog gen, an XDP program run by
BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES in the sender namespace,
pinned to one CPU, that gives each 64-byte UDP frame the next of SOURCES
source addresses and redirects it into the sender's veth. The receiver's
NAPI poll runs in softirq on the same CPU, in the generator's context, so
the CPU a case costs is the generator thread's CPU time plus any ksoftirqd
time, over the frames sent (see tests/bench/bench_e2e.c).

Then one source alone (issue 11), from one generator thread on one CPU and
from one on each of two CPUs at once, into the veth's two queues, so that
XDP runs on both CPUs and charges one window: bare XDP_DROP against xdp-rl
with that window full. Before each 2-CPU case, `bench_prog line` measures
what a cache line both CPUs write costs at that moment (on a VM, it depends
on where the host runs the vCPUs).

With --cases, only the cases named; make bench's part 7 runs the rate
(xdp_rl_rate: --rate L/1s --burst L, the same promise as nft's limit and
hashlimit with burst L) beside the fixed window, nft and hashlimit, without
the one-source cases.

Prints the two tables; writes every raw record to OUT.jsonl.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [
    ("xdp_drop", "bare XDP_DROP (the floor)"),
    ("xdp_pass", "bare XDP_PASS, all to the stack"),
    ("xdp_rl", "xdp-rl (XDP, native)"),
    ("xdp_rl_lru", "xdp-rl --table lru"),
    ("plain_lru", "plain LRU-hash limiter"),
    ("line_floor", "one line per source (floor)"),
    ("nft_ingress", "nft meter, netdev ingress"),
    ("nft_prerouting", "nft meter, ip prerouting (raw)"),
    ("ipt_hashlimit", "iptables hashlimit, raw PREROUTING"),
]
# Cases none of part 2's tables has: make bench part 7 names them (--cases).
EXTRA_CASES = [
    ("xdp_rl_rate", "xdp-rl --rate (GCRA)"),
]
# xdp-rl's own cases of the many-source flood, and those whose limit is a
# token bucket (L at once, then L/s: nft's limit, hashlimit, xdp-rl's rate).
RL_CASES = ("xdp_rl", "xdp_rl_lru", "xdp_rl_rate")
BUCKET_CASES = ("nft_ingress", "nft_prerouting", "ipt_hashlimit", "xdp_rl_rate")

# The count's bits in a window's count_gen (include/xdp_rl.h: XDP_RL_COUNT_BITS).
COUNT_BITS = 64 - 16

# One source flooding (issue 11): a generator thread per CPU, each into its
# own queue of the two-queue veth, so XDP runs on every CPU at once and
# charges one window. xdp-rl's window is full before the flood starts.
HOT_SOURCE = "198.19.0.0"
HOT_LIMIT = 1000
HOT_CASES = [
    ("hot_drop1", "bare XDP_DROP, 1 CPU", "drop", "1"),
    ("hot_rl1", "xdp-rl, window full, 1 CPU", "rl", "1"),
    ("hot_drop2", "bare XDP_DROP, 2 CPUs", "drop", "0,1"),
    ("hot_rl2", "xdp-rl, window full, 2 CPUs", "rl", "0,1"),
]
HOT = {c[0]: c for c in HOT_CASES}
# A 2-CPU round where a line both CPUs write cost each this much more than on
# one CPU: the vCPUs did not share their caches (bench_kern.c's HOT_BOUNCE_NS).
LINE_BOUNCED_NS = 10


def sh(*args, check=True, input=None):
    r = subprocess.run(args, input=input, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


class Bed:
    def __init__(self, a):
        self.a = a
        self.rx, self.tx, self.rx_if, self.tx_if, self.mac = a.rx, a.tx, a.rx_if, a.tx_if, a.mac
        # The flood is IPv4. Without IPv6 on the pair, no MLD or neighbour
        # discovery frame reaches xdp-rl as a source of its own and puts a
        # window in its counts that the exactness check would not expect.
        for ns, dev in ((self.rx, self.rx_if), (self.tx, self.tx_if)):
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")

    def nsx(self, *args, **kw):
        return sh("ip", "netns", "exec", self.rx, *args, **kw)

    def xdp(self, what):
        sh(self.a.bench_prog, "xdp", "--netns", self.rx, "--dev", self.rx_if, what)

    # ---- per-case setup, teardown and counters --------------------------------

    def setup(self, case, rnd):
        L, rx_if = self.a.limit, self.rx_if
        if case in HOT:
            if HOT[case][2] == "drop":
                self.xdp("drop")
            else:
                sh(self.a.xdp_rl, "-n", self.rx, "load", rx_if, "--limit", str(HOT_LIMIT),
                   "--window", "1h")
                # Its window full before the flood: every frame is over the limit.
                sh(self.a.xdp_rl, "-n", self.rx, "reset", rx_if, HOT_SOURCE, "--count",
                   str(HOT_LIMIT))
        elif case == "xdp_drop":
            self.xdp("drop")
        elif case == "xdp_pass":
            self.xdp("pass")
        elif case in ("xdp_rl", "xdp_rl_lru"):
            table = "lru" if case == "xdp_rl_lru" else "buckets"
            sh(self.a.xdp_rl, "-n", self.rx, "load", rx_if, "--limit", str(L), "--window", "1s",
               "--table", table)
        elif case == "plain_lru":
            # The kernel's LRU hash and one add per packet (part 1's plain reference),
            # as many entries as xdp-rl's table (--max-sources' default).
            sh(self.a.bench_prog, "xdp", "--netns", self.rx, "--dev", rx_if, "plain", str(L),
               "262144")
        elif case == "line_floor":
            # The least an exact per-source limiter touches: the header, and one
            # line per source in an array as large as xdp-rl's table (bare_line).
            sh(self.a.bench_prog, "xdp", "--netns", self.rx, "--dev", rx_if, "line", str(L),
               "262144")
        elif case == "xdp_rl_rate":
            sh(self.a.xdp_rl, "-n", self.rx, "load", rx_if, "--rate", f"{L}/1s", "--burst",
               str(L), "--table", "buckets")
        elif case == "nft_ingress":
            self.xdp("pass")
            self.nsx("nft", "-f", "-", input=f"""
table netdev bench {{
    set m {{ type ipv4_addr; size {self.a.table}; flags dynamic; }}
    chain c {{
        type filter hook ingress device "{rx_if}" priority 0; policy accept;
        ip saddr 198.18.0.0/15 update @m {{ ip saddr limit rate over {L}/second burst {L} packets }} counter drop
        ip saddr 198.18.0.0/15 counter
    }}
}}""")
        elif case == "nft_prerouting":
            self.xdp("pass")
            self.nsx("nft", "-f", "-", input=f"""
table ip bench {{
    set m {{ type ipv4_addr; size {self.a.table}; flags dynamic; }}
    chain c {{
        type filter hook prerouting priority raw; policy accept;
        ip saddr 198.18.0.0/15 update @m {{ ip saddr limit rate over {L}/second burst {L} packets }} counter drop
        ip saddr 198.18.0.0/15 counter
    }}
}}""")
        elif case == "ipt_hashlimit":
            self.xdp("pass")
            self.nsx("iptables", "-t", "raw", "-A", "PREROUTING", "-i", rx_if, "-s", "198.18.0.0/15",
                     "-m", "hashlimit", "--hashlimit-mode", "srcip",
                     "--hashlimit-above", f"{L}/sec", "--hashlimit-burst", str(L),
                     "--hashlimit-name", f"bench{rnd}",
                     "--hashlimit-htable-size", str(self.a.table),
                     "--hashlimit-htable-max", str(self.a.table * 2), "-j", "DROP")
            self.nsx("iptables", "-t", "raw", "-A", "PREROUTING", "-i", rx_if, "-s", "198.18.0.0/15")

    def teardown(self, case):
        """Undo whatever setup() may have done; never fails."""
        rl = case in RL_CASES or (case in HOT and HOT[case][2] == "rl")
        if rl:
            sh(self.a.xdp_rl, "-n", self.rx, "unload", self.rx_if, check=False)
        if case == "nft_ingress":
            self.nsx("nft", "delete", "table", "netdev", "bench", check=False)
        if case == "nft_prerouting":
            self.nsx("nft", "delete", "table", "ip", "bench", check=False)
        if case == "ipt_hashlimit":
            # iptables-nft: its table goes whole, so no empty hook stays behind.
            self.nsx("nft", "delete", "table", "ip", "raw", check=False)
        if not rl:
            sh(self.a.bench_prog, "xdp", "--netns", self.rx, "--dev", self.rx_if, "off",
               check=False)

    def last_window_passed(self):
        """What the sources passed in their latest windows, ended or not.

        `top` shows an ended window as empty, as it should; the table itself
        keeps the last count until a packet opens the next window. The bucket
        table is an array of buckets of 4 slots (include/xdp_rl.h): an IPv4
        slot is tag (key << 32 | LIVE), seen, then start_gen and count_gen of
        its one window, 8 bytes each, little-endian; count_gen holds the
        window's generation in its top XDP_RL_GEN_BITS (16) bits, its count
        below. An LRU table's elements have BTF: bpftool names their fields
        (a fresh window, generation 0, was never opened)."""
        ns = os.stat(f"/run/netns/{self.rx}").st_ino
        idx = json.loads(sh("ip", "-n", self.rx, "-j", "link", "show", "dev", self.rx_if))[0]["ifindex"]
        pin = f"/sys/fs/bpf/xdp-rl/{ns}/{idx}/src4"
        total = 0
        for e in json.loads(sh("bpftool", "-j", "map", "dump", "pinned", pin)):
            if "formatted" in e:
                for w in e["formatted"]["value"]["window"]:
                    # bpftool gives bit fields as hex strings ("0x5").
                    gen, count = (int(w[f], 0) if isinstance(w[f], str) else w[f]
                                  for f in ("gen", "count"))
                    if gen:
                        total += min(count, self.a.limit)
                continue
            v = bytes(int(b, 16) for b in e["value"])
            slot = len(v) // 4
            for s in range(0, len(v), slot):
                tag = int.from_bytes(v[s:s + 8], "little")
                if tag & 3 != 1:        # empty, or being handed over
                    continue
                count = int.from_bytes(v[s + 24:s + 32], "little") & ((1 << COUNT_BITS) - 1)
                total += min(count, self.a.limit)
        return total

    def counters(self, case):
        c = {}
        # The receiving veth's own per-queue XDP counters.
        for line in self.nsx("ethtool", "-S", self.rx_if).splitlines():
            k, _, v = line.strip().partition(": ")
            for name in ("xdp_packets", "xdp_drops"):
                if k.startswith("rx_queue_") and k.endswith("_" + name):
                    c["veth_" + name] = c.get("veth_" + name, 0) + int(v)
        # The receiving stack's own counters.
        snmp = self.nsx("cat", "/proc/net/snmp").splitlines()
        for i in range(0, len(snmp) - 1, 2):
            keys, vals = snmp[i].split(), snmp[i + 1].split()
            if keys[0] == "Ip:":
                d = dict(zip(keys[1:], map(int, vals[1:])))
                c["ip_in_receives"] = d["InReceives"]
                c["ip_in_delivers"] = d["InDelivers"]
            if keys[0] == "Udp:":
                d = dict(zip(keys[1:], map(int, vals[1:])))
                c["udp_no_ports"] = d["NoPorts"]
        # The tool's own verdict counters.
        if case in HOT and HOT[case][2] == "rl":
            s = json.loads(sh(self.a.xdp_rl, "-n", self.rx, "stats", self.rx_if, "--json"))
            s = s.get("stats", s)
            c["tool_passed"], c["tool_dropped"] = s["passed"], s["dropped"]
            # What the source offered in its window, as `get` reports it
            # (count + drops counted apart, bpf/hot.h), and that report's bound.
            g = json.loads(sh(self.a.xdp_rl, "-n", self.rx, "get", self.rx_if, HOT_SOURCE,
                              "--json"))
            c["hot_count"] = g["count"]
            c["hot_count_error_max"] = g.get("count_error_max_packets", 0)
        elif case in RL_CASES:
            s = json.loads(sh(self.a.xdp_rl, "-n", self.rx, "stats", self.rx_if, "--json"))
            s = s.get("stats", s)
            c["tool_passed"], c["tool_dropped"] = s["passed"], s["dropped"]
            c["tool_other"] = s["not_ip"] + s["malformed"] + s["table_errors"]
            c["tool_windows"] = s["new_windows"]
            if case != "xdp_rl_rate":
                c["tool_last_passed"] = self.last_window_passed()
        elif case in ("nft_ingress", "nft_prerouting"):
            fam, tab = ("netdev", "bench") if case == "nft_ingress" else ("ip", "bench")
            rules = [o["rule"] for o in json.loads(self.nsx("nft", "-j", "list", "table", fam, tab))
                     ["nftables"] if "rule" in o]
            cnt = [next(e["counter"]["packets"] for e in r["expr"] if "counter" in e) for r in rules]
            c["tool_dropped"], c["tool_passed"] = cnt[0], cnt[1]
        elif case in ("plain_lru", "line_floor"):
            c["tool_dropped"] = c.get("veth_xdp_drops", 0)
            c["tool_passed"] = c.get("veth_xdp_packets", 0) - c["tool_dropped"]
        elif case == "ipt_hashlimit":
            lines = self.nsx("iptables", "-t", "raw", "-vnxL", "PREROUTING").splitlines()[2:]
            cnt = [int(l.split()[0]) for l in lines if l.strip()]
            c["tool_dropped"], c["tool_passed"] = cnt[0], cnt[1]
        return c

    def gen(self, case):
        sources, cpus = (1, HOT[case][3]) if case in HOT else (self.a.sources, str(self.a.cpu))
        out = sh(self.a.bench_prog, "gen", "--netns", self.tx, "--dev", self.tx_if,
                 "--dst-mac", self.mac, "--sources", str(sources), "--base", "198.19.0.0",
                 "--seconds", str(self.a.seconds), "--cpu", cpus)
        return json.loads(out)

    def line(self):
        """What a cache line both CPUs write costs each of them now (bench_prog line)."""
        return json.loads(sh(self.a.bench_prog, "line"))


def trimmed(v):
    """Median and range after trimming the lowest and highest len/5."""
    s = sorted(v)
    t = len(s) // 5
    s = s[t:len(s) - t] if t else s
    return statistics.median(s), s[0], s[-1]


def fmt(v, prec=0, suffix=""):
    m, lo, hi = trimmed(v)
    return f"{m:.{prec}f}{suffix} [{lo:.{prec}f}..{hi:.{prec}f}]"


def main():
    p = argparse.ArgumentParser()
    for k in ("rx", "tx", "rx_if", "tx_if", "mac", "bench_prog", "xdp_rl", "out"):
        p.add_argument("--" + k.replace("_", "-"), dest=k, required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--sources", type=int, default=4096)
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--table", type=int, default=65536, help="nft set / hashlimit table size")
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--cases", help="the cases to run, comma-separated (default: part 2's, "
                   "the one-source cases included); xdp_drop, xdp_pass and xdp_rl always run")
    a = p.parse_args()
    known = [c[0] for c in CASES + EXTRA_CASES + HOT_CASES]
    want = a.cases.split(",") if a.cases else [c[0] for c in CASES + HOT_CASES]
    if set(want) - set(known):
        sys.exit(f"bench_e2e: unknown case in --cases: {sorted(set(want) - set(known))} "
                 f"(of {', '.join(known)})")
    for need in ("xdp_rl", "xdp_pass", "xdp_drop"):
        if need not in want:
            want.insert(0, need)
    cases = [c for c in CASES + EXTRA_CASES if c[0] in want]
    hot_cases = [c for c in HOT_CASES if c[0] in want]
    if hot_cases and len(hot_cases) != len(HOT_CASES):
        sys.exit("bench_e2e: the one-source cases run all or none")
    if not (1 <= a.rounds <= 20 and 0 < a.seconds <= 10 and 1 <= a.sources <= 65536):
        sys.exit("bench_e2e: --rounds, --seconds or --sources out of bounds")
    if a.table < 2 * a.sources:
        sys.exit("bench_e2e: --table must hold twice the sources (a full set fails open)")

    # The CPU measure counts softirq work inside the generator thread's time,
    # which holds unless the kernel accounts IRQ time apart.
    irqtime = False
    try:
        import gzip
        with gzip.open("/proc/config.gz", "rt") as f:
            irqtime = "CONFIG_IRQ_TIME_ACCOUNTING=y" in f.read()
    except OSError:
        pass

    bed = Bed(a)
    recs = []
    t_start = time.monotonic()
    with open(a.out + ".jsonl", "w") as raw:
        allc = [c[:2] for c in cases + hot_cases]
        for rnd in range(a.rounds):
            order = allc[rnd % len(allc):] + allc[:rnd % len(allc)]
            for case, _ in order:
                line = None
                try:
                    bed.setup(case, rnd)
                    time.sleep(0.2)
                    if case in HOT and "," in HOT[case][3]:
                        line = bed.line()
                    c0 = bed.counters(case)
                    g = bed.gen(case)
                    time.sleep(0.1)     # let the last NAPI poll finish
                    c1 = bed.counters(case)
                finally:
                    bed.teardown(case)
                rec = {"round": rnd, "case": case, "gen": g, "line": line,
                       "after": c1, "delta": {k: c1[k] - c0.get(k, 0) for k in c1}}
                recs.append(rec)
                raw.write(json.dumps(rec) + "\n")
                raw.flush()
    elapsed = time.monotonic() - t_start

    # Per round: each case against bare XDP_DROP of the same round.
    by = {}
    for r in recs:
        g, d = r["gen"], r["delta"]
        cpu = g["thread_cpu_ns"] + g["softirqd_ns"]
        if irqtime:     # softirq time is not in the thread's: take the CPU's
            cpu = g["stat_busy_own_ticks"] * 1e9 / g["tick_hz"]
        x = {
            "cpu_per_frame": cpu / g["frames"],
            "kern_per_frame": g["kernel_ns"] / g["frames"],
            "stat_per_frame": g["stat_busy_ticks"] * 1e9 / g["tick_hz"] / g["frames"],
            "stat_own_per_frame": g["stat_busy_own_ticks"] * 1e9 / g["tick_hz"] / g["frames"],
            "steal_own_pct": 100.0 * g["stat_steal_own_ticks"] / g["tick_hz"] / (g["wall_ns"] / 1e9),
            "windows_per_src": d.get("tool_windows", 0) / a.sources,
            "last_passed": d.get("tool_last_passed", 0),
            "mpps": g["frames"] / g["wall_ns"] * 1e3,
            "frames": g["frames"], "secs": g["wall_ns"] / 1e9,
            "arrived": d.get("veth_xdp_packets", 0),
            "delivered": d.get("ip_in_delivers", 0),
        }
        case = r["case"]
        if case == "xdp_drop" or (case in HOT and HOT[case][2] == "drop"):
            x["passed"], x["dropped"] = 0, d.get("veth_xdp_drops", 0)
        elif case == "xdp_pass":
            x["passed"], x["dropped"] = d.get("veth_xdp_packets", 0), 0
        else:
            x["passed"], x["dropped"] = d["tool_passed"], d["tool_dropped"]
        if case in HOT:
            # How much of its time each generator spent in its test runs
            # (the lowest): two CPUs contend only while both run.
            x["on_cpu_pct"] = min(100.0 * t["kernel_ns"] / t["wall_ns"] for t in g["threads"])
            x["line_bounce_ns"] = r["line"]["bounce_ns"] if r["line"] else None
            if HOT[case][2] == "rl":
                # The source's count as `get` reports it grew by what it was offered.
                x["count_miss"] = d["hot_count"] - x["dropped"]
                x["count_error_max"] = r["after"]["hot_count_error_max"]
        by.setdefault(case, {})[r["round"]] = x

    base = by["xdp_drop"]
    pas = by["xdp_pass"]
    for case, rounds in by.items():
        if case in HOT:
            for rnd, x in rounds.items():
                x["ratio"] = x["cpu_per_frame"] / by[case[:3] + "_drop" + case[-1]][rnd]["cpu_per_frame"]
                x["cpus_ratio"] = x["cpu_per_frame"] / by[case[:-1] + "1"][rnd]["cpu_per_frame"]
            continue
        for rnd, x in rounds.items():
            b = base[rnd]["cpu_per_frame"]
            x["ratio"] = x["cpu_per_frame"] / b
            x["over_xdp_rl"] = x["cpu_per_frame"] / by["xdp_rl"][rnd]["cpu_per_frame"]
            # What the limit lets through per source: a fixed window passes
            # the limit once per window opened; a token bucket with burst L
            # passes L at once and then L per second.
            x["passed_src"] = x["passed"] / a.sources
            if case in ("xdp_rl", "xdp_rl_lru"):
                # Every source offers far more than the limit in a whole
                # window, so each window but its latest passed the limit
                # exactly; the latest passed min(its count, limit).
                x["expect_src"] = (a.limit * (x["windows_per_src"] - 1)
                                   + x["last_passed"] / a.sources)
            elif case in BUCKET_CASES:
                x["expect_src"] = a.limit * (1 + x["secs"])
            # Per dropped frame: the frames it passed priced at what a frame
            # costs when all go to the stack (bare XDP_PASS, same round).
            cp = pas[rnd]["cpu_per_frame"]
            if x["dropped"]:
                x["per_dropped"] = (x["cpu_per_frame"] * x["frames"] - x["passed"] * cp) / x["dropped"]
                x["ratio_dropped"] = x["per_dropped"] / b
    with open(a.out + ".json", "w") as f:
        json.dump({"args": vars(a), "per_round": by}, f, indent=1)

    print(f"{a.sources} sources (198.19.0.0 + 0..{a.sources - 1}), 64-byte IPv4/UDP frames to "
          f"198.18.0.2:9 from 1 CPU (CPU {a.cpu}); limit {a.limit} packets per source per second; "
          f"{a.rounds} rounds of {a.seconds:g} s per case, case order rotating; "
          f"median [range] over rounds, lowest and highest {a.rounds // 5} trimmed.")
    if irqtime:
        print("CPU ns/frame: /proc/stat busy time of the generator's CPU / frames sent (this kernel "
              "accounts IRQ time apart from threads). x DROP: against bare XDP_DROP in the same round.")
    else:
        print("CPU ns/frame: generator thread CPU time + ksoftirqd time (the receiver's NAPI runs in "
              "the generator's softirq, charged to it) / frames sent. x DROP: against bare XDP_DROP "
              "in the same round.")
    print("per dropped: (CPU - passed x CPU/frame of 'all to the stack') / dropped. nft and "
          "iptables cases have a bare XDP_PASS program on the receiving veth (for NAPI).")
    if any(c == "line_floor" for c, _ in cases):
        print("one line per source: the floor of any exact per-source limiter (bare.bpf.c "
              "bare_line): the header read, one 64-byte line per source in an array as large as "
              "xdp-rl's table, one atomic add, the limit per source for the round.")
    print()
    hdr = (f"{'case':<36}{'CPU ns/frame':<22}{'x DROP':<20}{'ns/dropped':<22}{'x DROP':<20}"
           f"{'x xdp-rl':<8}{'Mpps':>6}{'passed/src':>12}{'expected':>10}{'passed':>9}"
           f"{'dropped':>10}{'arrived':>10}")
    print(hdr)
    for case, label in cases:
        rs = [by[case][k] for k in sorted(by[case])]

        def col(key, prec=0, suffix=""):
            v = [x[key] for x in rs if key in x]
            return fmt(v, prec, suffix) if v else "-"

        med = lambda key: statistics.median([x[key] for x in rs])  # noqa: E731
        exp = f"{med('expect_src'):.1f}" if "expect_src" in rs[0] else "-"
        print(f"{label:<36}{col('cpu_per_frame'):<22}{col('ratio', 2, 'x'):<20}"
              f"{col('per_dropped'):<22}{col('ratio_dropped', 2, 'x'):<20}"
              f"{med('over_xdp_rl'):<8.2f}{med('mpps'):>6.2f}{med('passed_src'):>12.1f}{exp:>10}"
              f"{int(med('passed')):>9}{int(med('dropped')):>10}{int(med('arrived')):>10}")
    if "xdp_rl_rate" in by:
        # The rate against the kernel's token buckets of the same promise, round by round.
        rate = by["xdp_rl_rate"]
        print("over xdp-rl --rate, CPU/frame, same round: " + "; ".join(
            f"{label} " + fmt([x["cpu_per_frame"] / rate[k]["cpu_per_frame"]
                               for k, x in sorted(by[case].items())], 2, "x")
            for case, label in cases if case not in ("xdp_rl_rate", "xdp_pass")))
    print()
    print("Cross-checks (medians), CPU ns/frame by other clocks: /proc/stat busy ticks (10 ms) of "
          "the generator's CPU and of all CPUs (which includes whatever else this shared VM runs), "
          "and the kernel's test_run duration (wall time, steal included):")
    for case, label in cases:
        rs = list(by[case].values())
        m = lambda k: statistics.median([x[k] for x in rs])  # noqa: E731
        print(f"  {label:<36} stat own CPU {m('stat_own_per_frame'):5.0f}  all CPUs "
              f"{m('stat_per_frame'):5.0f}  test_run {m('kern_per_frame'):5.0f}"
              f"  steal {m('steal_own_pct'):4.1f}%  frames {int(m('frames')):>8}"
              f"  delivered to UDP {int(m('delivered')):>6}"
              + (f"  windows opened/source {m('windows_per_src'):.2f}"
                 if case in ("xdp_rl", "xdp_rl_lru") else
                 f"  episodes begun/source {m('windows_per_src'):.2f}"
                 if case == "xdp_rl_rate" else ""))
    exact_miss = sum(1 for case in ("xdp_rl", "xdp_rl_lru") if case in by
                     for x in by[case].values()
                     if round(x["expect_src"] * a.sources) != x["passed"])
    print(f"x xdp-rl: CPU/frame over xdp-rl's, same round. passed/src: passed per source in one "
          f"run of T s (wall). expected: xdp-rl passes {a.limit} per window (a source's window opens "
          f"at its first packet and lasts 1 s; each window but its latest passed {a.limit}, so expected = "
          f"{a.limit} x (windows opened - 1, from stats) + min(latest window's count, {a.limit}), "
          f"from its table; xdp-rl rounds where passed != expected: {exact_miss}); nft 'limit rate over {a.limit}/second burst {a.limit} packets' and hashlimit "
          f"'--hashlimit-above {a.limit}/sec --hashlimit-burst {a.limit}' are token buckets: "
          f"{a.limit} at once, then {a.limit}/s, expected = {a.limit} x (1 + T). Same rate, "
          f"different shape; every source offers far more than either lets through."
          + (f" xdp-rl --rate {a.limit}/1s --burst {a.limit} makes the token buckets' promise: "
             f"expected the same, {a.limit} x (1 + T)." if "xdp_rl_rate" in by else ""))
    print()
    if hot_cases:
        hot_table(by, a)
    print(f"(end to end took {elapsed:.0f} s)")
    return 0


def hot_table(by, a):
    """One source flooding, on 1 CPU and on 2 at once (issue 11)."""
    print(f"One source flooding: {HOT_SOURCE} alone, 64-byte frames, a generator thread per CPU "
          f"(CPU {a.cpu}; CPUs 0 and 1 at once, each into its own queue of the two-queue veth, so "
          f"XDP runs on both and charges one window); xdp-rl '--limit {HOT_LIMIT} --window 1h' "
          f"with the window full before the flood ('reset {HOT_SOURCE} --count {HOT_LIMIT}'): "
          f"every frame is over the limit. Same rounds as above, cases in the same rotation.")
    print("x DROP: CPU/frame over bare XDP_DROP's on the same CPUs, same round. 2 CPUs / 1: "
          "CPU/frame on 2 CPUs over 1 CPU, same case and round. on CPU: the lower share of "
          "wall time a generator spent in its test runs (median). line: what a cache line both "
          "CPUs write cost each of them more on 2 CPUs than on 1, measured just before the case "
          "(bench_prog line); on this VM it depends on where the host runs the two vCPUs. "
          "count: the source's count in 'xdp-rl get' (count + drops counted apart) grew by "
          "exactly the frames xdp-rl dropped, in n of N rounds (else: by how much it missed, "
          "and get's stated error bound).")
    print()
    print(f"{'case':<32}{'CPU ns/frame':<22}{'x DROP':<20}{'2 CPUs / 1':<20}{'Mpps':>6}"
          f"{'on CPU':>8}{'passed':>9}{'dropped':>10}{'arrived':>10}  checks")
    for case, label, kind, cpus in HOT_CASES:
        rs = [by[case][k] for k in sorted(by[case])]
        med = lambda key: statistics.median([x[key] for x in rs])  # noqa: E731
        ratio = fmt([x["ratio"] for x in rs], 2, "x") if kind == "rl" else "1.00x"
        two = fmt([x["cpus_ratio"] for x in rs], 2, "x") if "," in cpus else ""
        checks = []
        if "," in cpus:
            checks.append("line " + fmt([x["line_bounce_ns"] for x in rs], 0, " ns"))
        if kind == "rl":
            miss = [x["count_miss"] for x in rs if x["count_miss"]]
            checks.append(f"count exact in {len(rs) - len(miss)} of {len(rs)}"
                          + (f" (missed by {min(miss)}..{max(miss)}, bound "
                             f"{max(x['count_error_max'] for x in rs)})" if miss else ""))
        print(f"{label:<32}{fmt([x['cpu_per_frame'] for x in rs]):<22}{ratio:<20}{two:<20}"
              f"{med('mpps'):>6.2f}{med('on_cpu_pct'):>7.0f}%{int(med('passed')):>9}"
              f"{int(med('dropped')):>10}{int(med('arrived')):>10}  " + "; ".join(checks))
    bounced = [k for k, x in by["hot_rl2"].items() if x["line_bounce_ns"] is not None
               and x["line_bounce_ns"] >= LINE_BOUNCED_NS]
    if bounced:
        print(f"Rounds where a line both CPUs write cost each at least {LINE_BOUNCED_NS} ns more "
              f"on 2 CPUs ({len(bounced)} of {len(by['hot_rl2'])}): xdp-rl, window full, 2 CPUs: "
              + fmt([by["hot_rl2"][k]["ratio"] for k in bounced], 2, "x") + " x DROP, "
              + fmt([by["hot_rl2"][k]["cpus_ratio"] for k in bounced], 2, "x") + " 2 CPUs / 1.")
    else:
        print(f"No round where a line both CPUs write cost each {LINE_BOUNCED_NS} ns or more on "
              f"2 CPUs: the two vCPUs shared their caches throughout.")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)   # the current case was torn down; bench.sh removes the rest
