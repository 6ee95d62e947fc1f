# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The limiter on real frames: what passes, what the CLI reports about it.

Ground truth is the receiver's nftables ingress counters (after XDP). Windows
are long (30s-60s) unless a test is about a window ending.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from rlbed import SEND_DEADLINE, run, run_ok, sleep_until

# What a source passes and what the CLI says of it: on each table (load --table).
pytestmark = pytest.mark.both_tables

WINDOW_MS = 30000


def per_source_rules(srcs):
    return {s: f"{'ip6' if ':' in s else 'ip'} saddr {s}" for s in srcs}


def check_get(bed, addr, key, count, limit, window_ms=WINDOW_MS, split=True):
    """`get` as it must be; without @split, the window began under other limits,
    so passed and dropped do not follow from count and limit, and are not shown."""
    g = bed.get(addr)
    assert g["address"] == addr
    assert g["key"] == key
    assert g["count"] == count, g
    assert g["limit"] == limit
    if split:
        assert g["passed"] == min(count, limit)
        assert g["dropped"] == count - min(count, limit)
    else:
        assert "passed" not in g and "dropped" not in g, g
    assert 0 < g["expires_in_ms"] <= window_ms, g
    return g


@pytest.mark.parametrize("srcs,keys", [
    (["198.19.1.1", "198.19.1.2", "198.19.1.3"],
     ["198.19.1.1/32", "198.19.1.2/32", "198.19.1.3/32"]),
    (["2001:2:0:a::1", "2001:2:0:b::1", "2001:2:0:c::1"],
     ["2001:2:0:a::/64", "2001:2:0:b::/64", "2001:2:0:c::/64"]),
], ids=["ipv4", "ipv6"])
@pytest.mark.kernels
def test_each_source_passes_exactly_limit(bed, srcs, keys):
    limit, extra = 20, 15
    bed.nft_counters(per_source_rules(srcs))
    out = bed.load("--limit", limit, "--window", "30s")
    assert f"loaded on {bed.rx_if}" in out

    bed.send(srcs, limit + extra)

    got = bed.counts()
    for s in srcs:
        assert got[s] == limit, (s, got)
    assert got["all"] == limit * len(srcs), got
    st = bed.stats()
    assert st["passed"] == limit * len(srcs), st
    assert st["dropped"] == extra * len(srcs), st
    assert st["would_drop"] == 0 and st["malformed"] == 0 and st["table_errors"] == 0, st
    assert st["new_windows"] == len(srcs), st
    for s, k in zip(srcs, keys):
        check_get(bed, s, k, limit + extra, limit)
    status = bed.status()
    v6 = ":" in srcs[0]
    assert status["active_sources_v6" if v6 else "active_sources_v4"] == len(srcs), status
    assert status["active_sources_v4" if v6 else "active_sources_v6"] == 0, status


@pytest.mark.parametrize("v6_prefix", [None, 128], ids=["default-64", "128"])
def test_ipv6_prefix_aggregation(bed, v6_prefix):
    """Two hosts of one /64 share a window by default, not with --v6-prefix 128."""
    a, b = "2001:2:0:1::1", "2001:2:0:1::2"
    limit, each = 20, 15
    bed.nft_counters(per_source_rules([a, b]))
    opts = ["--limit", limit, "--window", "30s"]
    if v6_prefix:
        opts += ["--v6-prefix", v6_prefix]
    bed.load(*opts)

    bed.send([a, b], each)

    got = bed.counts()
    st = bed.stats()
    if v6_prefix is None:
        assert got[a] + got[b] == limit, got
        assert (st["passed"], st["dropped"]) == (limit, 2 * each - limit), st
        for addr in (a, b, "2001:2:0:1:ffff::9"):
            check_get(bed, addr, "2001:2:0:1::/64", 2 * each, limit)
        assert bed.status()["v6_prefix"] == 64
        # Any host of the /64 names its window to reset.
        out = bed.xdp_ok("reset", bed.rx_if, "2001:2:0:1::77")
        assert "forgot 2001:2:0:1::/64" in out
        bed.send(b, each)
        assert bed.counts()[b] == got[b] + each
    else:
        assert (got[a], got[b]) == (each, each), got
        assert (st["passed"], st["dropped"]) == (2 * each, 0), st
        check_get(bed, a, f"{a}/128", each, limit)
        check_get(bed, b, f"{b}/128", each, limit)
        assert bed.xdp_json("get", bed.rx_if, "2001:2:0:1::3", "--json")["count"] == 0
        assert bed.status()["v6_prefix"] == 128


def test_ipv4_prefix_24(bed):
    """--v4-prefix 24: sources of one /24 share a window, another /24 has its own."""
    a, b, c = "198.19.2.1", "198.19.2.2", "198.19.3.1"
    limit, each = 20, 15
    bed.nft_counters(per_source_rules([a, b, c]))
    bed.load("--limit", limit, "--window", "30s", "--v4-prefix", 24)

    bed.send([a, b, c], each)

    got = bed.counts()
    assert got[a] + got[b] == limit, got
    assert got[c] == each, got
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (limit + each, 2 * each - limit), st
    check_get(bed, "198.19.2.77", "198.19.2.0/24", 2 * each, limit)
    check_get(bed, c, "198.19.3.0/24", each, limit)
    assert bed.status()["v4_prefix"] == 24


@pytest.mark.parametrize("vlans,ethertype", [([10], "8021q"), ([10, 20], "8021ad")],
                         ids=["802.1Q", "QinQ"])
@pytest.mark.parametrize("srcs,keys", [
    (["198.19.4.1", "198.19.4.2"], ["198.19.4.1/32", "198.19.4.2/32"]),
    (["2001:2:0:4::1", "2001:2:0:5::1"], ["2001:2:0:4::/64", "2001:2:0:5::/64"]),
], ids=["ipv4", "ipv6"])
def test_vlan_tagged_frames_are_limited(bed, vlans, ethertype, srcs, keys):
    limit, extra = 20, 10
    # Tagged frames go no further than netdev ingress (no VLAN devices), but
    # nft sees them there.
    bed.nft_counters({"tagged": f"ether type {ethertype}"})
    bed.load("--limit", limit, "--window", "30s")

    bed.send(srcs, limit + extra, vlans=vlans)

    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (limit * 2, extra * 2), st
    assert st["not_ip"] == 0 and st["malformed"] == 0, st
    for s, k in zip(srcs, keys):
        check_get(bed, s, k, limit + extra, limit)
    got = bed.counts()
    assert got["tagged"] == limit * 2, got
    assert got["all"] == limit * 2, got


def test_bytes(bed):
    """--bytes --limit 1000 with 100-byte frames: exactly 10 pass."""
    src = "198.19.5.1"
    bed.nft_counters(per_source_rules([src]))
    out = bed.load("--bytes", "--limit", 1000, "--window", "30s")
    assert "1000 bytes per 30s window" in out

    bed.send(src, 25, size=100)

    assert bed.counts()[src] == 10
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (10, 15), st
    assert (st["passed_bytes"], st["dropped_bytes"]) == (1000, 1500), st
    g = bed.get(src)
    assert (g["count"], g["unit"], g["limit"]) == (2500, "bytes", 1000), g
    assert 0 < g["expires_in_ms"] <= WINDOW_MS
    assert bed.status()["unit"] == "bytes"


def test_dry_run_then_enforce_then_dry_run(bed):
    src = "198.19.6.1"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    out = bed.load("--limit", limit, "--window", "60s", "--dry-run")
    assert "dry run" in out
    assert bed.status()["dry_run"] is True

    bed.send(src, 25)
    assert bed.counts()[src] == 25, "a dry run must drop nothing"
    st = bed.stats()
    assert (st["passed"], st["dropped"], st["would_drop"]) == (10, 0, 15), st
    g = bed.get(src)
    assert (g["count"], g["passed"], g["would_drop"]) == (25, 10, 15), g
    assert "dropped" not in g

    bed.xdp_ok("set", bed.rx_if, "--enforce")
    assert bed.status()["dry_run"] is False
    bed.send(src, 5)
    assert bed.counts()[src] == 25, "--enforce must drop again"
    st = bed.stats()
    assert (st["passed"], st["dropped"], st["would_drop"]) == (10, 5, 15), st

    bed.xdp_ok("set", bed.rx_if, "--dry-run")
    assert bed.status()["dry_run"] is True
    bed.send(src, 5)
    assert bed.counts()[src] == 30
    st = bed.stats()
    assert (st["passed"], st["dropped"], st["would_drop"]) == (10, 5, 20), st


@pytest.mark.kernels
def test_raised_limit_finds_the_drops_in_the_count(bed):
    """xdp-rl(8), set --limit: a window counts the packet that took it over and
    its first 4096 drops, so raising the limit from L to N gives a source that
    sent D past L in that window N - L - min(D, 4097) more."""
    src = "198.19.7.2"
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", 10, "--window", "1h")
    bed.send(src, 16)                       # 10 pass; D = 6
    assert bed.counts()[src] == 10
    assert bed.get(src)["count"] == 16
    bed.xdp_ok("set", bed.rx_if, "--limit", 20)
    bed.send(src, 10)                       # 20 - 10 - 6 = 4 more
    assert bed.counts()[src] == 14
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (14, 12), st


def test_set_limit_applies_to_open_window(bed):
    src = "198.19.7.1"
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", 10, "--window", "60s")

    bed.send(src, 15)
    assert bed.counts()[src] == 10

    out = bed.xdp_ok("set", bed.rx_if, "--limit", 30)
    assert "30 packets per 1m window" in out
    assert bed.status()["limit"] == 30
    bed.send(src, 15)                       # the window's count goes 16..30
    assert bed.counts()[src] == 25
    # 25 passed, 5 dropped, in a window opened under --limit 10: `get` must not
    # claim min(30, 30) = 30 passed.
    check_get(bed, src, f"{src}/32", 30, 30, 60000, split=False)
    assert "passed" not in bed.xdp_ok("get", bed.rx_if, src)

    bed.xdp_ok("set", bed.rx_if, "--limit", 20)
    assert bed.status()["limit"] == 20
    bed.send(src, 5)                        # 31..35, over 20
    assert bed.counts()[src] == 25
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (25, 10), st
    assert st["new_windows"] == 1, "set --limit must not restart the window"


def test_set_without_options_is_usage_error(bed):
    bed.load("--limit", 10, "--window", "60s")
    before = bed.status()
    r = bed.xdp("set", bed.rx_if)
    assert r.returncode == 2, r
    assert r.stderr.startswith("xdp-rl:") and r.stdout == ""
    assert bed.status() == before


@pytest.mark.kernels
def test_window_turnover(bed):
    """--window 3s: after the window ends the source passes `limit` again.
    (3s, not 1s: the send and the get that follows it stay in one window even
    in a slow guest of make test-kernels.)"""
    src = "198.19.8.1"
    limit, window = 10, 3.0
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", limit, "--window", "3s")

    bed.send(src, limit + 5)
    g = bed.get(src)
    assert g["count"] == limit + 5 and 0 < g["expires_in_ms"] <= 3000, g
    assert bed.counts()[src] == limit
    time.sleep(window + 0.5)                # clearly past the window

    g = bed.get(src)
    assert (g["count"], g["expires_in_ms"]) == (0, 0), g
    assert bed.top()["active_sources"] == 0
    assert bed.status()["active_sources_v4"] == 0

    bed.send(src, limit + 5)
    assert bed.counts()[src] == 2 * limit
    st = bed.stats()
    assert (st["passed"], st["dropped"], st["new_windows"]) == (2 * limit, 10, 2), st
    assert bed.get(src)["count"] == limit + 5


def test_aligned_window_ends_on_a_multiple_of_the_length(bed):
    src = "198.19.9.1"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    out = bed.load("--limit", limit, "--window", "1m", "--aligned")
    assert "aligned" in out
    assert bed.status()["alignment"] == "aligned"
    if time.time() % 60 > 55:               # keep the sends and the get in one window
        sleep_until((time.time() // 60 + 1) * 60 + 0.2)

    bed.send(src, limit + 5)
    t0 = time.time()
    g = bed.get(src)
    t1 = time.time()
    assert bed.counts()[src] == limit
    assert g["count"] == limit + 5, g
    # The window ends at the next multiple of 60s since the Unix epoch.
    hi = (60 - t0 % 60) * 1000 + 50
    lo = (60 - t1 % 60) * 1000 - 50
    assert lo <= g["expires_in_ms"] <= hi, (g, lo, hi)


@pytest.mark.kernels
def test_aligned_window_turnover(bed):
    src = "198.19.9.2"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    # 4s windows: each batch has seconds to stay in its window, even in a slow
    # guest of make test-kernels.
    bed.load("--limit", limit, "--window", "4s", "--aligned")
    # Start early in a window so that the first batch stays in it.
    if time.time() % 4 > 1:
        sleep_until((time.time() // 4 + 1) * 4 + 0.05)
    start = time.time()

    bed.send(src, limit + 5)
    assert time.time() // 4 == start // 4, "the first batch took too long"
    assert bed.counts()[src] == limit
    sleep_until((start // 4 + 1) * 4 + 0.3)  # clearly in the next window
    bed.send(src, limit + 5)
    assert bed.counts()[src] == 2 * limit
    st = bed.stats()
    assert (st["passed"], st["dropped"], st["new_windows"]) == (2 * limit, 10, 2), st


def test_set_window_shortens_open_window(bed):
    """`set --window` applies to open windows too: a window lasts the new
    length from when it began. A 60s window 0s old, cut to 5s, ends 5s after
    it began, with its count; later windows last 5s."""
    src = "198.19.16.1"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", limit, "--window", "60s")
    bed.send(src, 15)
    assert bed.counts()[src] == limit

    out = bed.xdp_ok("set", bed.rx_if, "--window", "5s")
    assert "10 packets per 5s window" in out
    assert bed.status()["window_ns"] == 5_000_000_000
    g = bed.get(src)
    assert g["count"] == 15 and 0 < g["expires_in_ms"] <= 5000, g
    bed.send(src, 5)
    assert bed.counts()[src] == limit, "the window still holds its count"
    time.sleep(g["expires_in_ms"] / 1000 + 0.2)
    bed.send(src, 15)
    assert bed.counts()[src] == 2 * limit
    g = bed.get(src)
    assert g["count"] == 15 and 0 < g["expires_in_ms"] <= 5000, g
    assert bed.stats()["new_windows"] == 2


def test_set_window_lengthens_open_window(bed):
    """A longer `set --window` lengthens open windows too: a 2s window, made
    30s, still holds its count after 2s, and ends 30s after it began."""
    src = "198.19.16.2"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", limit, "--window", "2s")
    bed.send(src, 15)
    began = time.monotonic()
    assert bed.counts()[src] == limit
    bed.xdp_ok("set", bed.rx_if, "--window", "30s")
    time.sleep(max(0.0, began + 2.5 - time.monotonic()))
    bed.send(src, 5)
    assert bed.counts()[src] == limit, "past its old end, the window still holds its count"
    g = bed.get(src)
    assert g["count"] == 20 and 25000 < g["expires_in_ms"] <= 28000, g
    assert bed.stats()["new_windows"] == 1


@pytest.mark.parametrize("load_opt,set_opt,alignment", [
    ("--per-key", "--aligned", "aligned"), ("--aligned", "--per-key", "per-key")])
def test_set_alignment_restarts_windows(bed, load_opt, set_opt, alignment):
    src = "198.19.17.1"
    limit = 10
    bed.nft_counters(per_source_rules([src]))
    bed.load("--limit", limit, "--window", "1h", load_opt)
    bed.send(src, 15)
    assert bed.counts()[src] == limit

    bed.xdp_ok("set", bed.rx_if, set_opt)
    assert bed.status()["alignment"] == alignment
    assert bed.get(src)["count"] == 0
    bed.send(src, 15)
    assert bed.counts()[src] == 2 * limit
    assert bed.get(src)["count"] == 15


def test_generic_mode(bed):
    srcs = ["198.19.18.1", "2001:2:0:18::1"]
    limit = 10
    bed.nft_counters(per_source_rules(srcs))
    out = bed.load("--limit", limit, "--window", "30s", "--mode", "generic")
    assert "generic mode" in out
    assert bed.status()["mode"] == "generic"
    for s in srcs:
        bed.send(s, 15)
    got = bed.counts()
    assert [got[s] for s in srcs] == [limit, limit], got
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (2 * limit, 10), st


@pytest.mark.kernels
def test_exact_with_senders_on_two_cpus(bed):
    """Two senders pinned to two CPUs hit the same sources at once. XPS maps
    each sender's CPU to its own veth queue, so XDP runs on both CPUs at the
    same time: still exactly `limit` pass per source, and `get` counts all."""
    if len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"):
        pytest.skip("needs two usable CPUs and taskset")
    cpus = sorted(os.sched_getaffinity(0))[:2]
    for q, cpu in enumerate(cpus):
        r = run(["ip", "netns", "exec", bed.tx, "sh", "-c",
                 f"echo {1 << cpu:x} > /sys/class/net/{bed.tx_if}/queues/tx-{q}/xps_cpus"])
        if r.returncode:
            pytest.skip(f"cannot map CPU {cpu} to veth queue {q} (XPS): {r.stderr.strip()}")
    srcs = ["198.19.19.1", "198.19.19.2"]
    limit, each = 3000, 5000
    bed.nft_counters(per_source_rules(srcs))
    bed.load("--limit", limit, "--window", "60s")

    procs = [subprocess.Popen(["taskset", "-c", str(cpu)] + bed.send_argv(srcs, each),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for cpu in cpus]
    try:
        for p in procs:
            out, err = p.communicate(timeout=SEND_DEADLINE + 15)
            assert p.returncode == 0, err
            bed.check_sent(out, srcs, each)
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)

    if shutil.which("ethtool"):
        q = run_ok(["ip", "netns", "exec", bed.rx, "ethtool", "-S", bed.rx_if]).stdout
        per_queue = [int(n) for n in re.findall(r"rx_queue_\d+_xdp_packets: (\d+)", q)]
        assert per_queue == [2 * each, 2 * each], f"both queues should carry a sender: {q}"
    got = bed.counts()
    assert [got[s] for s in srcs] == [limit, limit], got
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (2 * limit, 2 * (2 * each - limit)), st
    assert st["new_windows"] == 2, st
    for s in srcs:
        check_get(bed, s, f"{s}/32", 2 * each, limit, 60000)


def test_max_sources_bounds_the_table(bed):
    """--max-sources 16 is a table of 32 slots (2 per source). 200 sources, two
    packets each, round robin: a source's second packet comes 199 inserts after
    its first. Evicted sources start a new window when they return (nothing
    fails); only one whose slot outlived those inserts finds its window (and,
    at a limit of 1, is dropped), and no more than 32 can."""
    bed.load("--limit", 1, "--window", "60s", "--max-sources", 16)
    bed.send([], 2, src_range="198.19.21.1+200")    # round robin: 200 sources apart
    st = bed.stats()
    assert st["table_errors"] == 0, st
    assert st["passed"] + st["dropped"] == 400 and st["dropped"] <= 32, st
    assert st["new_windows"] == st["passed"] == st["inserts"], st
    assert st["inserts"] - st["evictions"] <= 32, st     # free slots: 32
    status = bed.status()
    assert status["max_sources"] == 16
    assert 0 < status["active_sources_v4"] <= 32, status
    assert 0 < bed.top("--count", 1000)["active_sources"] <= 32
