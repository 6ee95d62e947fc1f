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

from test_capture import Capture, readers, tshark, verdicts  # noqa: F401 (readers: a fixture)
from test_events import records, start, stop, wait_for
from test_metrics import parse, promtool_check, value

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


def test_every_view_of_a_ban(bed, tmp_path, readers):
    """What status, rule list, top, events, capture and metrics say of a ban, on
    the same flood: each tells the same bans and banned packets as `stats`."""
    bed.load("--limit", 3, "--window", "1h", "--ban", "10m")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.18.53.0/24", "--layer", "2/1h", "--ban", "1h")
    st = bed.status()
    assert st["ban"] == "10m" and st["bans_checked"] is True, st
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")
    assert [r["ban"] for r in rules["rules"]] == ["1h"], rules
    ev = start(bed, "--json")
    out = str(tmp_path / "ban.pcapng")
    cap = Capture(bed, "--banned", out=out)
    try:
        bed.send([A, "198.18.53.1"], 6)
        assert wait_for(lambda: bed.stats()["over_limit"] >= 2)
        time.sleep(0.5)
    finally:
        rc, err = cap.stop()
        lines, _ = stop(ev)
    assert rc == 0, err
    s = bed.stats()
    # A: 3 pass, the 4th crosses, 2 banned; the rule's: 2, the 3rd, 3 banned.
    assert s["bans"] == 2 and s["drops_banned"] == 2 + 3, s
    evs = {e["source"]: e for e in records(lines) if e["kind"] == "source"}
    assert evs[f"{A}/32"]["banned"] is True and evs["198.18.53.1/32"]["banned"] is True, evs
    got = verdicts(tshark(out))
    assert got == {(A, "banned", "drop"): 2, ("198.18.53.1", "banned", "drop"): 3}, got
    top = bed.top()
    assert top["banned_keys"] == 2, top
    g = bed.get("198.18.53.1")
    assert g["banned"] is True and 3500 * 1000 < g["ban_ends_in_ms"] <= 3600 * 1000, g
    text = bed.xdp_ok("metrics")
    promtool_check(text)
    samples, _ = parse(text)
    assert value(samples, "xdp_rl_bans_total", interface=bed.rx_if) == 2
    assert value(samples, "xdp_rl_drops_total", interface=bed.rx_if, reason="banned") == 5
    assert value(samples, "xdp_rl_sources_banned", interface=bed.rx_if, family="ipv4") == 2
