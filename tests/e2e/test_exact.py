# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One window, one set of limits: sources under different limits never share
a window, whatever their keys; and what an operator or an application can do
to a source's window (reset, reset --count, charge), as Hammer's set and inc.

Ground truth is the receiver's nftables ingress counters (after XDP).
"""
import json
import time

import pytest

from rlbed import run

# What a source passes and what the CLI says of it: on each table (load --table).
pytestmark = pytest.mark.both_tables


def saddr(s):
    return f"{'ip6' if ':' in s else 'ip'} saddr {s}"


def counters(bed, *srcs):
    bed.nft_counters({s: saddr(s) for s in srcs})


# ---- one state, one set of limits ----------------------------------------------

def test_rule_finer_than_the_key_keeps_its_own_windows(bed):
    """The issue's case: sources keyed per /24, a /32 rule of 10 per hour
    inside. Before, the /32's packets were charged to the /24's state under
    the rule's limits and its neighbour's under 100/1s, and the 1s windows
    kept restarting the hour: .5 passed all 30 it sent."""
    five, six = "198.19.50.5", "198.19.50.6"
    counters(bed, five, six)
    bed.load("--limit", 100, "--window", "1s", "--per-key", "--v4-prefix", 24)
    bed.xdp_ok("rule", "add", bed.rx_if, f"{five}/32", "--layer", "10/1h")
    for i in range(6):
        bed.send([five, six], 5)
        if i < 5:
            time.sleep(1.3)
    got = bed.counts()
    assert got[five] == 10, got
    assert got[six] == 30, got
    g5, g6 = bed.get(five), bed.get(six)
    assert g5["key"] == g6["key"] == "198.19.50.0/24"
    assert g5["rule"] == f"{five}/32" and g5["limit"] == 10 and g5["count"] == 30, g5
    assert "rule" not in g6 and g6["limit"] == 100 and g6["count"] == 5, g6
    top = bed.top()["sources"]
    mine = [s for s in top if s["key"] == "198.19.50.0/24"]
    assert sorted((s.get("rule", ""), s["limit"]) for s in mine) == \
        sorted([("", 100), (f"{five}/32", 10)]), top


def test_aggregates_keep_each_limit_set_apart(bed):
    """Sources refused a slot share their /24's aggregate window only with
    sources under the same limits."""
    first, ruled, plain = "198.19.51.1", "198.19.52.5", "198.19.52.6"
    counters(bed, ruled, plain)
    bed.load("--limit", 100, "--window", "1h", "--new-sources", "1/1h",
             "--on-table-full", "aggregate")
    bed.send(first, 1)                       # the one insert the cap allows
    bed.xdp_ok("rule", "add", bed.rx_if, f"{ruled}/32", "--layer", "3/1h")
    bed.send([ruled, plain], 5)
    got = bed.counts()
    assert (got[ruled], got[plain]) == (3, 5), got
    assert bed.stats()["aggregated"] == 10
    g = bed.get(ruled)
    assert g["kind"] == "aggregate" and g["count"] == 5 and g["limit"] == 3, g
    g = bed.get(plain)
    assert g["kind"] == "aggregate" and g["count"] == 5 and g["limit"] == 100, g


def test_a_rule_added_over_an_open_window_starts_its_own(bed):
    """A rule added for a source with an open window: the source is charged
    under the rule from then on, in a window of its own; deleted, the source
    is back in its old window under the global limit, which it had used up."""
    src = "198.19.53.1"
    counters(bed, src)
    bed.load("--limit", 5, "--window", "1h")
    bed.send(src, 5)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.53.0/24", "--layer", "3/1h")
    bed.send(src, 5)
    assert bed.counts()[src] == 8
    bed.xdp_ok("rule", "del", bed.rx_if, "198.19.53.0/24")
    bed.send(src, 5)
    assert bed.counts()[src] == 8
    assert bed.get(src)["count"] == 10


# ---- reset, reset --count, charge -------------------------------------------------

@pytest.mark.kernels
def test_charge_and_reset_count_change_the_budget(bed):
    src = "198.19.54.1"
    counters(bed, src)
    bed.load("--limit", 5, "--window", "1h")
    t0 = time.time() * 1000
    out = bed.xdp_ok("charge", bed.rx_if, src, 3)
    assert "charged 3 to 198.19.54.1/32" in out, out
    g = bed.get(src)
    assert g["count"] == 3 and g["opened_at_ms"] >= t0 - 1000, g
    assert (g["charged_by_command"], g["passed"], g["dropped"]) == (3, 0, 0), g
    bed.send(src, 5)
    assert bed.counts()[src] == 2, "3 of 5 were used by the charge"
    g = bed.get(src)
    assert (g["count"], g["charged_by_command"], g["passed"], g["dropped"]) == (8, 3, 2, 3), g

    out = bed.xdp_ok("reset", bed.rx_if, src, "--count", 5)
    assert "starts afresh holding 5" in out, out
    bed.send(src, 3)
    assert bed.counts()[src] == 2, "a fresh window holding the limit: blocked"
    g = bed.get(src)
    assert g["count"] == 8 and g["expires_in_ms"] > 3590 * 1000, g
    assert g["last_seen_ms"] >= g["opened_at_ms"] - 100, g

    bed.xdp_ok("reset", bed.rx_if, src, "--count", 0)
    bed.send(src, 6)
    assert bed.counts()[src] == 7
    bed.xdp_ok("charge", bed.rx_if, src)    # N defaults to 1
    assert bed.get(src)["count"] == 7


@pytest.mark.both_tables
def test_charges_are_shown_apart_from_packets(bed):
    """`charge` is no traffic: get shows what it put in apart from the
    packets, which pass and drop by what the charges left of the budget."""
    src = "198.19.54.9"
    counters(bed, src)
    bed.load("--limit", 200, "--window", "1h")
    bed.xdp_ok("charge", bed.rx_if, src, 500)
    g = bed.get(src)
    assert (g["count"], g["charged_by_command"], g["passed"], g["dropped"]) == \
        (500, 500, 0, 0), g
    text = bed.xdp_ok("get", bed.rx_if, src)
    assert "500 packets (500 by 'charge'; of 0 packets, 0 passed, 0 dropped)" in text, text
    bed.send(src, 4)
    assert bed.counts()[src] == 0
    g = bed.get(src)
    assert (g["count"], g["charged_by_command"], g["passed"], g["dropped"]) == \
        (504, 500, 0, 4), g

    # Packets first, then a charge past the limit: the packets passed, the charge did not fit.
    other = "198.19.54.10"
    counters(bed, src, other)
    bed.send(other, 150)
    bed.xdp_ok("charge", bed.rx_if, other, 100)
    bed.send(other, 10)
    assert bed.counts()[other] == 150
    g = bed.get(other)
    assert (g["count"], g["charged_by_command"], g["passed"], g["dropped"]) == \
        (260, 100, 150, 10), g
    # A reset --count is put in by a command too; a plain reset leaves nothing of it.
    bed.xdp_ok("reset", bed.rx_if, other, "--count", 20)
    bed.send(other, 3)
    g = bed.get(other)
    assert (g["count"], g["charged_by_command"], g["passed"], g["dropped"]) == \
        (23, 20, 3, 0), g
    bed.xdp_ok("reset", bed.rx_if, other)
    bed.send(other, 2)
    g = bed.get(other)
    assert (g["count"], g["charged_by_command"], g["passed"]) == (2, 0, 2), g


def test_charge_opens_a_window_for_a_source_never_seen(bed):
    src = "2001:2:0:55::1"
    counters(bed, src)
    bed.load("--limit", 4, "--window", "1h")
    bed.xdp_ok("charge", bed.rx_if, src, 4)
    g = bed.get(src)
    assert g["key"] == "2001:2:0:55::/64" and g["count"] == 4, g
    bed.send(src, 3)
    assert bed.counts()[src] == 0


def test_charge_and_reset_of_a_shared_budget(bed):
    a, b = "198.19.56.1", "198.19.56.2"
    counters(bed, a, b)
    bed.load("--limit", 100, "--window", "1h")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.56.0/24", "--layer", "6/1h", "--shared")
    out = bed.xdp_ok("charge", bed.rx_if, a, 4)
    assert "shared budget" in out, out
    bed.send([a, b], 2)
    assert bed.counts()[a] + bed.counts()[b] == 2
    bed.xdp_ok("reset", bed.rx_if, b)
    bed.send([a, b], 2)
    assert bed.counts()[a] + bed.counts()[b] == 6


def test_charge_and_reset_errors_change_nothing(bed):
    src = "198.19.57.1"
    bed.load("--limit", 5, "--window", "1h")
    bed.xdp_ok("charge", bed.rx_if, src, 2)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.58.0/24", "--deny")
    for argv, code, word in (
            (["charge", bed.rx_if, src, 0], 2, "invalid N"),
            (["charge", bed.rx_if, src, "3x"], 2, "invalid N"),
            (["charge", bed.rx_if, "not-an-ip"], 2, "invalid ADDRESS"),
            (["charge", bed.rx_if, src, 1, 2], 2, "unexpected"),
            (["charge", bed.rx_if, "198.19.58.1"], 1, "denied"),
            (["reset", bed.rx_if, src, "--count", "-1"], 2, "--count"),
            (["reset", bed.rx_if, "--all", "--count", 3], 2, "--count"),
            (["charge", "lo", src], 1, "not loaded")):
        r = bed.xdp(*argv)
        assert r.returncode == code and word in r.stderr, (argv, r)
        assert r.stdout == "", (argv, r)
    assert bed.get(src)["count"] == 2


def test_get_shows_when_the_window_opened_and_the_source_was_last_seen(bed):
    src = "198.19.59.1"
    bed.load("--limit", 5, "--window", "1h")
    t0 = time.time() * 1000
    bed.send(src, 1)
    time.sleep(1.1)
    bed.send(src, 1)
    t1 = time.time() * 1000
    g = bed.get(src)
    # The window opened with the first packet, the source was seen at the second.
    assert t0 - 50 <= g["opened_at_ms"] <= t0 + 1000, (t0, g)
    assert g["last_seen_ms"] >= g["opened_at_ms"] + 900 and g["last_seen_ms"] <= t1 + 50, g
    never = bed.get("198.19.59.2")
    assert never["opened_at_ms"] is None and never["last_seen_ms"] is None, never
    r = run(bed.argv("get", bed.rx_if, src))
    assert r.returncode == 0 and "198.19.59.1/32" in r.stdout
    json.loads(bed.xdp_ok("top", bed.rx_if, "--json"))
