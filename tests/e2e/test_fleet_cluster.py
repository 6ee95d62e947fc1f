# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""xdp-rl fleet through a Redis Cluster, and what the agent says when Redis fails.

The fleet of test_fleet.py (two testbeds, a namespace of their own for Redis
joined to both receivers), with three redis-server masters in the Redis
namespace (198.18.200.1, ports 7000-7002) made a cluster by `redis-cli
--cluster create`, and each agent given a different single node as its
seed. Many sources send to both limiters at once; their keys (one per
source and window) fall on every node, and each source keeps the bound of
doc/fleet.md. A node killed mid-run: its keys' sources are held to the
local limits, the agents count errors, run on, and share again when it is
back.

Every process a test starts is stopped by its pid, and every namespace it
makes is removed, whatever the test did (test_fleet.Fleet's down()).
"""
import json
import os
import subprocess
import time

import pytest

import rlbed
import test_fleet as tf
from rlbed import run, run_ok

PORTS = (7000, 7001, 7002)
NSRC = 12                      # sources, 198.19.80.1 and on
SRC_BASE = "198.19.80.1"
SRCS = [f"198.19.80.{1 + i}" for i in range(NSRC)]


def crc16(data):
    """Redis Cluster's key hash (CRC16/XMODEM), to tell which node a key is on."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xffff
    return crc


def slot(key):
    return crc16(key.encode()) % 16384


class LateBurst(AssertionError):
    pass


class ClusterFleet(tf.Fleet):
    """test_fleet's Fleet with a three-master Redis Cluster in its Redis namespace."""

    def node(self, port):
        d = os.path.join(self.tmp, f"node{port}")
        os.makedirs(d, exist_ok=True)
        # Without full coverage the other masters serve on while one is down.
        p = self.spawn(["redis-server", "--bind", tf.REDIS_ADDR, "--port", port,
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", 1000,
                        "--cluster-require-full-coverage", "no", "--save", "",
                        "--appendonly", "no", "--protected-mode", "no", "--dir", d,
                        "--loglevel", "warning", "--daemonize", "no"], f"node{port}")
        self.wait_port(port, p)
        return p

    def cluster(self, replicas=()):
        """The three masters of PORTS; with @replicas (three more ports), a
        replica of each."""
        ports = PORTS + tuple(replicas)
        self.nodes = {port: self.node(port) for port in ports}
        run_ok(["ip", "netns", "exec", self.ns, "redis-cli", "--cluster", "create",
                *[f"{tf.REDIS_ADDR}:{p}" for p in ports], "--cluster-replicas",
                "1" if replicas else "0", "--cluster-yes"], timeout=60)
        for port in ports:
            self.wait_cluster_ok(port)

    def wait_cluster_ok(self, port, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if "cluster_state:ok" in self.cli("cluster", "info", port=port):
                return
            time.sleep(0.2)
        raise AssertionError(f"node {port}: the cluster is not ok: "
                             f"{self.cli('cluster', 'info', port=port)}")

    def owners(self, port=PORTS[0]):
        """The slot map as a node has it: slot -> port of its master."""
        owner = {}
        for line in self.cli("cluster", "nodes", port=port).splitlines():
            f = line.split()
            if "master" not in f[2]:
                continue
            p = int(f[1].split("@")[0].rsplit(":", 1)[1])
            for r in f[8:]:
                if r.startswith("["):
                    continue
                lo, _, hi = r.partition("-")
                for s in range(int(lo), int(hi or lo) + 1):
                    owner[s] = p
        return owner

    def key(self, src, number):
        return f"xdp-rl:{self.tag}:all:{tf.WINDOW_S}s:{src}/32:{number}"

    def node_keys(self):
        """Each node's keys of this fleet, with their values."""
        return {p: self.keys(port=p) for p in PORTS if self.nodes[p].poll() is None}

    def replica_of(self, master, port=PORTS[0]):
        """The port of @master's replica, as a node sees the cluster."""
        ids = {}
        lines = [line.split() for line in self.cli("cluster", "nodes", port=port).splitlines()]
        for f in lines:
            ids[f[0]] = int(f[1].split("@")[0].rsplit(":", 1)[1])
        mid = next(f[0] for f in lines if ids[f[0]] == master)
        return next(ids[f[0]] for f in lines if "slave" in f[2] and f[3] == mid)

    # ---- limiters, traffic ------------------------------------------------------

    def load(self, *opts):
        for bed in self.beds:
            bed.load("--limit", tf.LIMIT, "--window", f"{tf.WINDOW_S}s", *opts)
            bed.nft_counters({s: f"ip saddr {s}" for s in SRCS})

    def burst_all(self, rate=tf.RATE, secs=tf.BURST_S, during=None, tries=3):
        """At the start of the next window every source sends @rate packets a
        second to each limiter for @secs (@during runs meanwhile); returns
        ({source: [passed at each limiter]}, the window's number). A burst
        that a loaded machine stretched past its window measures nothing:
        sent again in a later window, @tries times at most."""
        for _ in range(tries - 1):
            try:
                return self.burst_once(rate, secs, during)
            except LateBurst as e:
                print(f"\n{e}: again")
                during = None   # (what it did is done)
        return self.burst_once(rate, secs, during)

    def burst_once(self, rate, secs, during):
        before = [bed.counts() for bed in self.beds]
        start = (int(time.time() // tf.WINDOW_S) + 1) * tf.WINDOW_S + 0.05
        rlbed.sleep_until(start)
        count = int(rate * secs)
        procs = [(subprocess.Popen(bed.send_argv([], count, src_range=f"{SRC_BASE}+{NSRC}")
                                   + ["--pps", str(rate * NSRC)], stdout=subprocess.PIPE,
                                   text=True), time.time()) for bed in self.beds]
        if during:
            during()
        for p, t0 in procs:
            out, _ = p.communicate(timeout=rlbed.SEND_DEADLINE + 15)
            rep = json.loads(out)
            assert rep["sent"] == count * NSRC and not rep["timed_out"], rep
            assert time.time() - t0 >= secs * 0.95
        if time.time() >= start - 0.05 + tf.WINDOW_S:
            raise LateBurst(f"the burst ran past its window by {time.time() - start:.2f} s")
        time.sleep(0.3)  # the agents' last rounds of the window
        after = [bed.counts() for bed in self.beds]
        return ({s: [a[s] - b[s] for a, b in zip(after, before)] for s in SRCS},
                int(start // tf.WINDOW_S))

    def wait_clean(self, i, quiet_s=1.0, timeout=tf.AGENT_WAIT_S):
        """Until agent @i has synced every round for @quiet_s, errors not growing."""
        end = time.time() + timeout
        st = self.fleet_stats(i)
        while time.time() < end:
            time.sleep(quiet_s)
            nxt = self.fleet_stats(i)
            if nxt["state"] == "syncing" and nxt["sync_errors"] == st["sync_errors"] and \
                    nxt["rounds"] > st["rounds"]:
                return nxt
            st = nxt
        raise AssertionError(f"agent {i} does not sync cleanly: {st}\n{self.agent_log(i)}")


@pytest.fixture
def cfleet(privileged, request):
    tf.need("redis-server")
    tf.need("redis-cli")
    f = ClusterFleet()
    request.addfinalizer(f.down)
    return f.start()


def check_sources(passed, what, sources=SRCS):
    """doc/fleet.md's bound for each source; each limiter within the limit alone."""
    b = tf.bound(tf.LIMIT, [tf.RATE, tf.RATE])
    totals = {s: sum(passed[s]) for s in sources}
    print(f"\n{what}: {len(sources)} sources, per source total min {min(totals.values())} "
          f"max {max(totals.values())}, bound {b:.0f} (no fleet: {2 * tf.LIMIT})")
    for s in sources:
        assert all(p <= tf.LIMIT for p in passed[s]), f"{what}: {s} over the limit alone: " \
            f"{passed[s]}"
        assert tf.LIMIT <= totals[s] <= b, f"{what}: {s} passed {passed[s]}, bound {b:.0f}"
    return totals


def start_agents(f):
    # Each agent its own seed: a different node of the cluster.
    for i in range(2):
        f.start_agent(i, redis=f"{tf.REDIS_ADDR}:{PORTS[i]}")
    for i in range(2):
        f.wait_syncing(i)
        f.wait_clean(i)


def test_cluster_shares_every_source(cfleet):
    """Each agent given one node: keys on every node, every source within the
    bound (before: the keys of the other nodes' slots got -MOVED, not
    shared, 2x); the agents say it is a cluster; stats and metrics as with
    one Redis."""
    f = cfleet
    f.load("--aligned")
    f.cluster()
    start_agents(f)
    numbers = []
    for _ in range(2):
        passed, number = f.burst_all()
        check_sources(passed, "cluster")
        numbers.append(number)
    tf.check_rounds_fast(f)
    # Every key where its slot says, and all three nodes hold some.
    owner = f.owners()
    held = f.node_keys()
    for n in numbers:
        for s in SRCS:
            k = f.key(s, n)
            assert k in held[owner[slot(k)]], (k, owner[slot(k)])
    for p in PORTS:
        assert held[p], f"node {p} holds none of the fleet's keys: {held}"
    print("keys per node:", {p: len(k) for p, k in held.items()})
    for i in range(2):
        log = f.agent_log(i)
        assert "is a cluster of 3 masters" in log, log
        assert log.count("connected to Redis") == 1, log
        st = f.fleet_stats(i)
        assert st["sync_errors"] == 0 and st["connects"] == 1, st
    tf.check_metrics(f.beds[0])
    for i in range(2):
        assert f.stop_agent(i) == 0, f.agent_log(i)


def test_cluster_node_down_and_back(cfleet):
    """A master killed: the sources whose keys it holds are held to the local
    limits, the others still share; errors are counted, the agents run on
    and say which node failed; restarted, it serves again and every source
    shares again."""
    f = cfleet
    f.load("--aligned")
    f.cluster()
    start_agents(f)
    passed, _ = f.burst_all()
    check_sources(passed, "before the kill")

    owner = f.owners()
    dead = PORTS[2]
    f.stop(f.nodes[dead])
    errors = [f.fleet_stats(i)["sync_errors"] for i in range(2)]
    passed, number = f.burst_all()
    on_dead = [s for s in SRCS if owner[slot(f.key(s, number))] == dead]
    alive = [s for s in SRCS if s not in on_dead]
    print(f"\nnode {dead} down: {len(on_dead)} sources' keys on it, {len(alive)} elsewhere")
    for s in on_dead:
        assert all(p <= tf.LIMIT for p in passed[s]), (s, passed[s])
    if alive:
        check_sources(passed, f"node {dead} down, the other nodes' sources", alive)
    for i in range(2):
        st = f.fleet_stats(i)
        assert f.agents[i].poll() is None, f.agent_log(i)
        assert st["running"] and st["sync_errors"] > errors[i], st
        log = f.agent_log(i)
        print(f"agent {i}: {log}")
        assert f"node {tf.REDIS_ADDR}:{dead}" in log, log
        assert "retrying in 0 ms" not in log, log

    f.nodes[dead] = f.node(dead)      # the same nodes.conf: it rejoins with its slots
    f.wait_cluster_ok(dead)
    for i in range(2):
        f.wait_clean(i)
    passed, _ = f.burst_all()
    check_sources(passed, "the node back")
    for i in range(2):
        assert "syncing again" in f.agent_log(i), f.agent_log(i)
        assert f.stop_agent(i) == 0


def test_slot_migrated_mid_run(cfleet):
    """Slots moved from one master to another during a burst (redis-cli
    --cluster reshard: MIGRATING/IMPORTING, MIGRATE, -ASK then -MOVED): no
    shared count lost, every source within the bound."""
    f = cfleet
    f.load("--aligned")
    f.cluster()
    start_agents(f)
    ids = {}
    for line in f.cli("cluster", "nodes", port=PORTS[0]).splitlines():
        fields = line.split()
        ids[int(fields[1].split("@")[0].rsplit(":", 1)[1])] = fields[0]

    def reshard():
        time.sleep(0.3)
        run_ok(["ip", "netns", "exec", f.ns, "redis-cli", "--cluster", "reshard",
                f"{tf.REDIS_ADDR}:{PORTS[0]}", "--cluster-from", ids[PORTS[0]],
                "--cluster-to", ids[PORTS[1]], "--cluster-slots", 3000, "--cluster-yes"],
               timeout=30)

    before = f.owners()
    passed, number = f.burst_all(during=reshard)
    after = f.owners()
    moved = [s for s in SRCS if before[slot(f.key(s, number))] != after[slot(f.key(s, number))]]
    print(f"\nresharded: 3000 slots moved, {len(moved)} of the window's keys with them")
    check_sources(passed, "a reshard mid-burst")
    held = f.node_keys()
    for s in SRCS:
        k = f.key(s, number)
        v = held[after[slot(k)]].get(k)
        # What both pushed, wherever the key went: what both passed (and a refused charge or two).
        assert v is not None and sum(passed[s]) <= v <= sum(passed[s]) + 4, (k, v, passed[s])
    for i in range(2):
        assert f.stop_agent(i) == 0, f.agent_log(i)


# ---- what the agent says ---------------------------------------------------------

def test_messages_noauth_and_reconnects(cfleet):
    """Against a Redis with a password and no --password-file: Redis's own
    -NOAUTH and what to do, said once (not a line per reconnection), and
    never 'retrying in 0 ms'."""
    f = cfleet
    f.load("--aligned")
    f.redis(password="s3cret-fleet")
    f.start_agent(0)
    time.sleep(2.5)
    f.beds[0].send(SRCS[0], 50)
    time.sleep(1.0)
    log = f.agent_log(0)
    print(f"\n{log}")
    st = f.fleet_stats(0)
    assert st["sync_errors"] > 0 and st["running"], st
    assert "NOAUTH Authentication required" in log, log
    assert "--password-file" in log, log
    assert log.count("connected to Redis") <= 1, log
    assert log.count("NOAUTH") == 1, log
    assert "retrying in 0 ms" not in log, log
    assert f.stop_agent(0) == 0


def test_master_killed_and_its_replica_promoted(cfleet):
    """Three masters with a replica each: a master killed, the cluster
    promotes its replica; the agents read the slot map again, and every
    source shares again through the new master, within the bound."""
    f = cfleet
    f.load("--aligned")
    f.cluster(replicas=(7003, 7004, 7005))
    start_agents(f)
    passed, _ = f.burst_all()
    check_sources(passed, "three masters with replicas")

    dead = PORTS[2]
    heir = f.replica_of(dead)
    f.stop(f.nodes[dead])
    end = time.time() + 30
    while set(f.owners(PORTS[0]).values()) != {PORTS[0], PORTS[1], heir}:
        assert time.time() < end, f"replica {heir} was not promoted: {f.owners(PORTS[0])}"
        time.sleep(0.2)
    f.wait_cluster_ok(PORTS[0])
    for i in range(2):
        f.wait_clean(i)
    passed, number = f.burst_all()
    check_sources(passed, f"master {dead} killed, replica {heir} promoted")
    moved = [s for s in SRCS if f.owners(PORTS[0])[slot(f.key(s, number))] == heir]
    assert moved, "some source's key lives on the promoted replica"
    held = f.keys(port=heir)
    for s in moved:
        assert f.key(s, number) in held, (s, sorted(held)[:5])
    for i in range(2):
        assert f.agents[i].poll() is None, f.agent_log(i)
        assert f.stop_agent(i) == 0, f.agent_log(i)
