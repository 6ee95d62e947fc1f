# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Bans (--ban DUR) on real frames: a source that floods past its limit is
banned, its benign traffic stays blocked for the ban's length, windows after
the flood's included, then passes again; other sources are untouched; `get`
shows the ban and when it ends, `reset` lifts it, `stats` counts it; a rule's
own ban; `set --ban` live.

Ground truth is the receiver's nftables ingress counters (after XDP). Times
are measured around each send, and a frame counts as sent inside the ban only
if its send ended before the ban could have (the flood's start + DUR).
"""
import time

import pytest

pytestmark = pytest.mark.both_tables

A, B = "198.18.50.1", "198.18.50.2"


def rules(*srcs):
    return {s: f"ip saddr {s}" for s in srcs}


def timed_send(bed, src, count):
    t0 = time.monotonic()
    bed.send(src, count)
    return t0, time.monotonic()


def test_flood_banned_then_recovers(bed):
    ban = 6.0
    bed.nft_counters(rules(A, B))
    bed.load("--limit", 5, "--window", "1s", "--ban", "6s")
    start, flood_end = timed_send(bed, A, 30)
    assert bed.counts()[A] == 5, bed.counts()
    st = bed.stats()
    assert st["bans"] == 1 and st["drops_banned"] == 24, st
    # Benign traffic of the banned source, across several of its windows.
    inside = 0
    while time.monotonic() < start + ban - 1.0:
        t0, t1 = timed_send(bed, A, 1)
        assert t1 < start + ban, "a send took too long to tell what the ban did"
        inside += 1
        time.sleep(0.6)
    assert inside >= 3, inside
    assert bed.counts()[A] == 5, (bed.counts(), inside)
    g = bed.get(A)
    assert g.get("banned") is True, g
    assert 0 < g["ban_ends_in_ms"] <= ban * 1000, g
    # Another source has its own limit.
    bed.send(B, 7)
    assert bed.counts()[B] == 5, bed.counts()
    # After the ban: the limit again, and a second flood bans again.
    wait = flood_end + ban + 0.3 - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    bed.send(A, 8)
    assert bed.counts()[A] == 10, bed.counts()
    st = bed.stats()
    assert st["bans"] == 3, st  # A's, B's, A's again
    assert st["drops_banned"] == 24 + inside + 1 + 2, st


def test_reset_lifts_a_ban(bed):
    bed.nft_counters(rules(A))
    bed.load("--limit", 3, "--window", "1h", "--ban", "1h")
    bed.send(A, 5)
    assert bed.get(A).get("banned") is True
    bed.xdp_ok("reset", bed.rx_if, A)
    g = bed.get(A)
    assert not g.get("banned"), g
    bed.send(A, 5)
    assert bed.counts()[A] == 3 + 3, bed.counts()


def test_set_ban_live_and_off(bed):
    """`set --ban` applies to bans made from then on; `--ban off` makes none."""
    bed.nft_counters(rules(A, B))
    bed.load("--limit", 2, "--window", "1s")
    bed.send(A, 4)
    time.sleep(1.2)
    bed.send(A, 2)
    assert bed.counts()[A] == 4, "no ban without --ban"
    bed.xdp_ok("set", bed.rx_if, "--ban", "1h")
    assert bed.stats()["bans"] == 0
    bed.send(B, 4)
    time.sleep(1.2)
    bed.send(B, 2)
    assert bed.counts()[B] == 2, "banned for an hour"
    bed.xdp_ok("set", bed.rx_if, "--ban", "off")
    time.sleep(1.2)
    bed.send(B, 2)
    assert bed.counts()[B] == 2, "--ban off leaves the ban in force"
    bed.send(A, 4)
    time.sleep(1.2)
    bed.send(A, 2)
    assert bed.counts()[A] == 4 + 2 + 2, "--ban off makes no new ban"
    assert bed.stats()["bans"] == 1


def test_rule_ban(bed):
    """A rule's own --ban for its per-source limits; the global limits have none."""
    bed.nft_counters(rules(A, "198.18.51.1"))
    bed.load("--limit", 2, "--window", "1s")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.18.50.0/24", "--layer", "2/1s", "--ban", "1h")
    bed.send([A, "198.18.51.1"], 4)
    time.sleep(1.2)
    bed.send([A, "198.18.51.1"], 2)
    got = bed.counts()
    assert got[A] == 2 and got["198.18.51.1"] == 4, got
    r = bed.xdp("rule", "add", bed.rx_if, "198.18.52.0/24", "--layer", "2/1s", "--shared",
                "--ban", "1m")
    assert r.returncode != 0 and "--shared" in r.stderr, (r.returncode, r.stderr)
