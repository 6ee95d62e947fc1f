#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""make bench, part 4: what the fleet agent (xdp-rl fleet) costs per sync round.

Run by scripts/bench.sh with its namespace pair (scripts/testbed.sh), which it
always removes. A redis-server runs in the receiver's namespace on its own
127.0.0.1 (nothing on disk), started and stopped by its pid here.

For each case the limiter is loaded afresh (--aligned, windows of an hour, a
limit no source reaches, so every window stays open and under its limit),
then N sources are made active by bench_prog gen's in-kernel flood (one CPU),
and the agent runs at --sync 100ms --sync-above 0 (every open window is a
candidate) while the flood goes on, so that every round has new counts to
push: the agent's worst case. Measured over the agent's rounds: its CPU time
(/proc/PID/schedstat: on-CPU ns), Redis's CPU time, the commands and bytes
it sent and received, the windows synced and left out by --max-synced; and
the round's own duration (scan, Redis, writes). Then the same with no new
traffic (every window open, nothing new: one GET per window, or nothing for
those past --max-synced). Each case on either source table (load --table):
an LRU table's elements are read through the kernel, in batches, and each
share written into an element by the program (BPF_PROG_TEST_RUN), where the
bucket table is read and written in place.

The same agent against a Redis Cluster of three masters (three
redis-server --cluster-enabled on 127.0.0.1 in the receiver's namespace,
made one cluster by redis-cli --cluster create), the agent given one node:
each round's commands split over the masters by slot, all at once. Redis's
CPU time is then the three servers'.

Prints one table; writes every raw record to OUT.jsonl.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SYNC_MS = 100


def sh(*args, check=True):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(map(str, args)), r.returncode,
                                                r.stderr.strip()))
    return r.stdout


def cpu_ns(pid):
    """Time @pid's threads spent on a CPU, in ns (schedstat's first field)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


class Bench:
    def __init__(self, a):
        self.a = a
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="xdp-rl-bench-fleet-")

    def xdp(self, *args, check=True):
        return sh(self.a.xdp_rl, "-n", self.a.rx, *args, check=check)

    def start(self, argv, name, ns=None):
        log = open(os.path.join(self.tmp, name + ".log"), "ab")
        pre = ["ip", "netns", "exec", ns] if ns else []
        p = subprocess.Popen(pre + [str(x) for x in argv], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        log.close()
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return p.returncode

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)

    def cli(self, port, *args):
        return subprocess.run(["ip", "netns", "exec", self.a.rx, "redis-cli", "-p", str(port),
                               *[str(x) for x in args]], capture_output=True, text=True).stdout

    def redis(self, port=None, *extra):
        port = port or self.a.port
        d = os.path.join(self.tmp, f"redis{port}")
        os.makedirs(d, exist_ok=True)
        p = self.start(["redis-server", "--bind", "127.0.0.1", "--port", port, "--save",
                        "", "--appendonly", "no", "--dir", d, "--loglevel", "warning", *extra],
                       f"redis{port}", ns=self.a.rx)
        for _ in range(100):
            if "PONG" in self.cli(port, "ping"):
                return p
            time.sleep(0.1)
        raise RuntimeError("redis-server does not answer")

    def cluster(self):
        """Three masters on the ports after --port, one cluster; their processes."""
        ports = [self.a.port + 1 + i for i in range(3)]
        procs = [self.redis(port, "--cluster-enabled", "yes", "--cluster-config-file",
                            os.path.join(self.tmp, f"nodes{port}.conf")) for port in ports]
        out = self.cli(ports[0], "--cluster", "create",
                       *[f"127.0.0.1:{port}" for port in ports], "--cluster-yes")
        for _ in range(100):
            if all("cluster_state:ok" in self.cli(port, "cluster", "info") for port in ports):
                return ports, procs
            time.sleep(0.1)
        raise RuntimeError("the cluster is not up: " + out)

    def flood(self, sources, seconds):
        return self.start([self.a.bench_prog, "gen", "--netns", self.a.tx, "--dev", self.a.tx_if,
                           "--dst-mac", self.a.mac, "--sources", sources, "--base",
                           "198.18.1.0", "--seconds", seconds, "--cpu", "1"], "gen")

    def fleet(self):
        return json.loads(self.xdp("stats", self.a.rx_if, "--json"))["fleet"]

    def case(self, sources, max_synced, table, redis, port=None, kind="one"):
        self.xdp("unload", self.a.rx_if, check=False)
        self.xdp("load", self.a.rx_if, "--aligned", "--limit", 100000000, "--window", "1h",
                 "--table", table)
        # Every source active before the agent starts.
        g = self.flood(sources, 2)
        g.wait(30)
        agent = self.start([self.a.xdp_rl, "-n", self.a.rx, "fleet", self.a.rx_if, "--redis",
                            f"127.0.0.1:{port or self.a.port}", "--group", "bench", "--sync",
                            f"{SYNC_MS}ms", "--sync-above", "0", "--max-synced", max_synced],
                           "agent")
        end = time.time() + 20
        while time.time() < end:
            st = self.fleet()
            if st and st["state"] == "syncing" and st["rounds"] >= 3:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the agent does not sync: %s" % self.fleet())
        recs = []
        for phase in ("flooding", "idle"):
            g = self.flood(sources, self.a.seconds + 1) if phase == "flooding" else None
            time.sleep(0.5)
            s0, a0, r0, t0 = (self.fleet(), cpu_ns(agent.pid),
                              sum(cpu_ns(p.pid) for p in redis), time.time())
            time.sleep(self.a.seconds)
            s1, a1, r1, t1 = (self.fleet(), cpu_ns(agent.pid),
                              sum(cpu_ns(p.pid) for p in redis), time.time())
            if g:
                g.wait(30)
            rounds = s1["rounds"] - s0["rounds"]
            d = {k: s1[k] - s0[k] for k in ("commands", "bytes_sent", "bytes_received",
                                            "windows_synced", "windows_left_out",
                                            "sync_errors")}
            rec = {"sources": sources, "max_synced": max_synced, "table": table, "phase": phase,
                   "redis": kind,
                   "seconds": t1 - t0, "rounds": rounds, "agent_cpu_ns": a1 - a0,
                   "redis_cpu_ns": r1 - r0, "round_us_last": s1["round_us"], **d}
            recs.append(rec)
        if self.stop(agent) != 0:
            raise RuntimeError("the agent did not stop cleanly")
        self.xdp("unload", self.a.rx_if)
        return recs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for o in ("--rx", "--tx", "--rx-if", "--tx-if", "--mac", "--bench-prog", "--xdp-rl", "--out"):
        p.add_argument(o, required=True)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--port", type=int, default=6399)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()

    cases = [(n, cap, t) for t in ("buckets", "lru")
             for n, cap in ((1000, 4096), (100000, 4096), (100000, 100000))]
    if a.quick:
        cases = [(n, cap, t) for t in ("buckets", "lru") for n, cap in ((1000, 4096), (100000, 4096))]
        a.seconds = min(a.seconds, 2)
    clustered = [(1000, 4096, "buckets"), (100000, 4096, "buckets")]
    if a.quick:
        clustered = clustered[:1]
    b = Bench(a)
    recs = []
    try:
        redis = b.redis()
        for sources, cap, table in cases:
            recs += b.case(sources, cap, table, [redis])
        ports, nodes = b.cluster()
        for sources, cap, table in clustered:
            recs += b.case(sources, cap, table, nodes, port=ports[0], kind="cluster3")
    finally:
        b.xdp("unload", a.rx_if, check=False)
        b.stop_all()
    with open(a.out + ".jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")

    print("Per round (--sync %dms, --sync-above 0; means over %.0f s of rounds):" %
          (SYNC_MS, a.seconds))
    print("%-8s %-8s %-9s %-8s %-9s %7s %9s %9s %9s %10s %10s %9s %9s %9s" % (
        "redis", "table", "sources", "cap", "traffic", "rounds", "agent CPU", "Redis CPU",
        "commands", "bytes out", "bytes in", "synced", "left out", "round"))
    for r in recs:
        n = max(r["rounds"], 1)
        print("%-8s %-8s %-9d %-8d %-9s %7d %7.2f ms %7.2f ms %9.0f %10.0f %10.0f %9.0f %9.0f "
              "%6.2f ms"
              % (r["redis"], r["table"], r["sources"], r["max_synced"], r["phase"], r["rounds"],
                 r["agent_cpu_ns"] / n / 1e6, r["redis_cpu_ns"] / n / 1e6, r["commands"] / n,
                 r["bytes_sent"] / n, r["bytes_received"] / n, r["windows_synced"] / n,
                 r["windows_left_out"] / n, r["round_us_last"] / 1e3))
    errors = sum(r["sync_errors"] for r in recs)
    if errors:
        print("(%d sync errors during the measurement)" % errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
