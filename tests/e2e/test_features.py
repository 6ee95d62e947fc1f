# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Layered windows, per-prefix rules and the source table under a spoofed
flood, on real frames. Ground truth is the receiver's nftables ingress
counters (after XDP)."""
import os
import subprocess
import tempfile
import time

import pytest

from rlbed import run

# What a source passes and what the CLI says of it: on each table (load --table).
pytestmark = pytest.mark.both_tables

WINDOW = "30s"


def saddr(s):
    return f"{'ip6' if ':' in s else 'ip'} saddr {s}"


# ---- layered windows ---------------------------------------------------------

def test_layers_refused_packets_do_not_use_up_longer_layers(bed):
    src = "198.19.2.1"
    bed.nft_counters({src: saddr(src)})
    out = bed.load("--layer", "5/30s", "--layer", "8/60s")
    assert "5 packets per 30s window and 8 packets per 1m window" in out

    bed.send(src, 12)
    assert bed.counts()[src] == 5
    g = bed.get(src)
    lay = g["layers"]
    assert [x["limit"] for x in lay] == [5, 8]
    # The 30s layer counts all 12 (its drops included); the 60s layer only
    # the 5 it was charged for: the 7 refused by the first are not charged.
    assert [x["count"] for x in lay] == [12, 5], g
    assert 0 < lay[0]["expires_in_ms"] <= 30000 and 30000 < lay[1]["expires_in_ms"] <= 60000

    st = bed.status()
    assert [(x["limit"], x["window"]) for x in st["layers"]] == [(5, "30s"), (8, "1m")]
    assert st["max_layers"] == 2


@pytest.mark.kernels
def test_layers_take_back_a_refused_packets_earlier_charges(bed):
    """The second layer refuses: the first layer's charge for it is taken back."""
    src = "198.19.2.2"
    bed.nft_counters({src: saddr(src)})
    # Both windows outlast the test, even in a slow guest of make test-kernels
    # (a 1s window there ended between the send and the get).
    bed.load("--layer", "10/30s", "--layer", "4/60s")
    bed.send(src, 9)
    assert bed.counts()[src] == 4
    lay = bed.get(src)["layers"]
    assert [x["count"] for x in lay] == [4, 9], lay


def test_set_layers_live_and_room(bed):
    src = "198.19.2.3"
    bed.nft_counters({src: saddr(src)})
    bed.load("--layer", "5/30s", "--layer", "100/60s")
    bed.send(src, 3)
    bed.xdp_ok("set", bed.rx_if, "--layer", "8/30s", "--layer", "100/60s")
    bed.send(src, 10)
    # The new limit applies to the open window: 8 in all.
    assert bed.counts()[src] == 8
    # More layers than the table has room for: refused, nothing changed.
    r = bed.xdp("set", bed.rx_if, "--layer", "1/1s", "--layer", "2/2s", "--layer", "3/3s")
    assert r.returncode == 1 and "--max-layers" in r.stderr, r.stderr
    assert [x["limit"] for x in bed.status()["layers"]] == [8, 100]
    # --limit sets one layer; this limiter runs two: refused for what runs, as
    # the layer count above, and nothing changed.
    r = bed.xdp("set", bed.rx_if, "--limit", "9")
    assert r.returncode == 1 and "layers" in r.stderr, r.stderr
    assert [x["limit"] for x in bed.status()["layers"]] == [8, 100]


@pytest.mark.parametrize("args", [
    ["--layer", "5"], ["--layer", "5/"], ["--layer", "/1s"], ["--layer", "0/1s"],
    ["--layer", "5/1x"], ["--layer", "5/1s", "--limit", "3"],
    ["--layer", "1/1s"] * 5, ["--on-table-full", "drop"],
    ["--new-sources", "10"], ["--on-table-full", "bogus", "--new-sources", "1/1s"],
    ["--max-layers", "5"], ["--max-layers", "1", "--layer", "1/1s", "--layer", "2/2s"],
], ids=lambda a: " ".join(a))
def test_bad_layer_options_are_usage_errors(bed, args):
    r = bed.xdp("load", bed.rx_if, *args)
    assert r.returncode == 2, (args, r.stderr)
    assert r.stderr.startswith("xdp-rl: ") and r.stdout == ""
    assert bed.limiters() == []


# ---- per-prefix rules --------------------------------------------------------

@pytest.mark.kernels
def test_rules_allow_deny_own_and_shared(bed):
    srcs = {"free": "198.19.3.1", "banned": "198.19.3.129", "own1": "198.19.4.1",
            "own2": "198.19.4.2", "sh1": "198.19.5.1", "sh2": "198.19.5.2",
            "plain": "198.19.6.1", "v6": "2001:2:0:7::1"}
    bed.nft_counters({k: saddr(v) for k, v in srcs.items()})
    bed.load("--limit", 3, "--window", WINDOW)
    for args in (["198.19.3.0/24", "--allow"], ["198.19.3.128/25", "--deny"],
                 ["198.19.4.0/24", "--layer", "6/30s"],
                 ["198.19.5.0/24", "--layer", "4/30s", "--shared"],
                 ["2001:2:0:7::/64", "--layer", "5/30s"]):
        assert "added rule" in bed.xdp_ok("rule", "add", bed.rx_if, *args)
    bed.send([v for v in srcs.values() if ":" not in v], 10)
    bed.send(srcs["v6"], 10)
    got = bed.counts()
    assert got["free"] == 10          # allowed: never limited
    assert got["banned"] == 0         # the /25 deny wins inside the /24 allow
    assert got["own1"] == 6 and got["own2"] == 6   # the rule's own limit, per source
    assert got["sh1"] + got["sh2"] == 4            # one budget for the prefix
    assert got["plain"] == 3          # no rule: the global limit
    assert got["v6"] == 5
    st = bed.stats()
    assert st["allowed"] == 10 and st["denied"] == 10, st

    rules = {r["prefix"]: r for r in
             bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]}
    assert rules["198.19.3.0/24"]["hits"] == 10 and rules["198.19.3.0/24"]["action"] == "allow"
    assert rules["198.19.3.128/25"]["dropped"] == 10
    assert rules["198.19.4.0/24"]["hits"] == 20 and rules["198.19.4.0/24"]["dropped"] == 8
    assert rules["198.19.5.0/24"]["shared"] is True
    assert rules["198.19.5.0/24"]["dropped"] == 16
    g = bed.get("198.19.5.2")
    assert g["key"] == "198.19.5.0/24" and g["kind"] == "shared" and g["count"] == 20, g
    assert bed.status()["rules"] == 5


@pytest.mark.kernels
def test_rules_change_live_without_resetting_windows(bed):
    a, b = "198.19.8.1", "198.19.9.1"
    bed.nft_counters({a: saddr(a), b: saddr(b)})
    bed.load("--limit", 10, "--window", WINDOW)
    prog = bed.xdp_prog_id()
    bed.send([a, b], 6)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.9.0/24", "--deny")
    bed.send([a, b], 6)
    got = bed.counts()
    assert got[a] == 10, got          # a's window went on: 6 + 4
    assert got[b] == 6, got           # b denied from the rule on
    assert bed.get(a)["count"] == 12
    assert bed.xdp_prog_id() == prog  # never detached or replaced
    bed.xdp_ok("rule", "del", bed.rx_if, "198.19.9.0/24")
    assert bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"] == []
    bed.send(b, 2)
    assert bed.counts()[b] == 8       # b's own window (6 so far) was kept


def test_rule_errors(bed):
    bed.load("--limit", 10)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.10.0/24", "--deny")
    cases = [
        (["rule", "add", bed.rx_if, "198.19.10.5/24", "--deny"], 2, "did you mean 198.19.10.0/24"),
        (["rule", "add", bed.rx_if, "198.19.10.0/24", "--allow"], 1, "has a rule"),
        (["rule", "del", bed.rx_if, "198.19.11.0/24"], 1, "no rule for that prefix"),
        (["rule", "add", bed.rx_if, "198.19.12.0/24"], 2, "exactly one of"),
        (["rule", "add", bed.rx_if, "198.19.12.0/24", "--allow", "--deny"], 2, "exactly one of"),
        (["rule", "add", bed.rx_if, "198.19.12.0/24", "--shared"], 2, "--shared goes with --layer"),
        (["rule", "add", bed.rx_if, "198.19.12.0/33", "--deny"], 2, "prefix length"),
        (["rule", "add", bed.rx_if, "198.19.12.0/24", "--layer", "1/1s", "--layer", "2/2s"],
         1, "--max-layers"),
        (["rule", "frob", bed.rx_if], 2, "unknown subcommand"),
    ]
    for argv, code, text in cases:
        r = bed.xdp(*argv)
        assert r.returncode == code, (argv, r.returncode, r.stderr)
        assert text in r.stderr, (argv, r.stderr)
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert [(r["prefix"], r["action"]) for r in rules] == [("198.19.10.0/24", "deny")]


def test_rules_file(bed):
    good = ("# allow the monitoring subnet\n198.19.13.0/24 --allow\n\n"
            "198.19.14.0/24 --layer 2/30s --shared   # one budget\n"
            "2001:2:0:15::/64 --deny\n")
    bad = good + "198.19.16.0/24 --layer 5/1x\n"
    src = "198.19.14.7"
    with tempfile.TemporaryDirectory() as d:
        gp, bp = os.path.join(d, "good.rules"), os.path.join(d, "bad.rules")
        open(gp, "w").write(good)
        open(bp, "w").write(bad)
        r = bed.xdp("load", bed.rx_if, "--rules", bp)
        assert r.returncode == 2 and f"{bp}:6:" in r.stderr and "no rule was applied" in r.stderr
        assert bed.limiters() == []
        bed.nft_counters({src: saddr(src)})
        assert "3 rules" in bed.load("--limit", 10, "--rules", gp)
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert [r["prefix"] for r in rules] == ["198.19.13.0/24", "198.19.14.0/24", "2001:2:0:15::/64"]
    bed.send(src, 5)
    assert bed.counts()[src] == 2


def write_rules(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_force_with_rules_keeps_the_old_rules_until_the_swap(bed):
    """`load --force --rules` while a denied source sends: the old rules hold
    until the new program (with the new rules) replaces the old one, so not
    one of its frames gets through."""
    src = "198.19.20.1"
    many = "".join(f"198.19.{21 + i // 250}.{i % 250 + 1}/32 --deny\n" for i in range(3000))
    with tempfile.TemporaryDirectory() as d:
        f1 = write_rules(d, "a.rules", f"{src}/32 --deny\n" + many)
        f2 = write_rules(d, "b.rules", many + f"{src}/32 --deny\n198.19.40.0/24 --allow\n")
        bed.load("--limit", 1000000, "--rules", f1)
        bed.nft_counters({src: saddr(src)})
        argv = bed.send_argv(src, 3000000)
        argv[argv.index("--deadline") + 1] = "8"     # bounded in time as in count
        sender = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            t = time.monotonic()
            while bed.stats()["denied"] == 0 and time.monotonic() - t < 5:
                time.sleep(0.05)
            assert bed.stats()["denied"] > 0, "the sender never got going"
            out = bed.load("--force", "--limit", 1000000, "--rules", f2)
            assert "3002 rules" in out
            after = bed.stats()["denied"]
            time.sleep(0.3)
            # The frames overlapped the swap: some were denied after it.
            assert sender.poll() is None and bed.stats()["denied"] > after
        finally:
            sender.kill()
            sender.wait(timeout=10)
    assert bed.counts()[src] == 0
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert len(rules) == 3002 and any(r["prefix"] == "198.19.40.0/24" for r in rules)
    # Ids are handed out afresh: one more rule goes in.
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.41.0/24", "--deny")


def test_force_keeps_room_for_the_rules_it_keeps(bed):
    bed.load("--limit", 5, "--max-layers", 2)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.42.0/24", "--layer", "1/1s", "--layer", "2/2s")
    prog = bed.xdp_prog_id()
    r = bed.xdp("load", bed.rx_if, "--force", "--limit", 5, "--max-layers", 1)
    assert r.returncode == 1 and "--max-layers 2" in r.stderr, r.stderr
    assert bed.xdp_prog_id() == prog and bed.status()["max_layers"] == 2
    out = bed.load("--force", "--limit", 6)
    assert bed.status()["max_layers"] == 2, out


def test_rules_file_errors_change_nothing(bed):
    with tempfile.TemporaryDirectory() as d:
        f = write_rules(d, "wide.rules", "198.19.43.0/24 --deny\n"
                        "198.19.44.0/24 --layer 1/1s --layer 5/1m\n")
        r = bed.xdp("load", bed.rx_if, "--max-layers", 1, "--rules", f)
        assert r.returncode == 2 and f"{f}:2:" in r.stderr, r.stderr
        bed.load("--limit", 10, "--rules", f)
        r = bed.xdp("load", bed.rx_if, "--force", "--rules", d)
        assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert [r["prefix"] for r in rules] == ["198.19.43.0/24", "198.19.44.0/24"]


def test_layer_dropped_by_set_starts_empty_when_put_back(bed):
    """A layer taken out of force by `set` must not come back with its old
    count when it is put back: a change in the number of layers is a new
    limit set, under which every window starts afresh."""
    src = "198.19.45.1"
    bed.nft_counters({src: saddr(src)})
    bed.load("--layer", "100/60s", "--layer", "8/10m")
    bed.send(src, 20)
    assert bed.counts()[src] == 8
    # The 10m layer refused 12 and keeps their charge; the 60s layer gave back its.
    assert [x["count"] for x in bed.get(src)["layers"]] == [8, 20]
    bed.xdp_ok("set", bed.rx_if, "--layer", "100/60s")
    bed.xdp_ok("set", bed.rx_if, "--layer", "100/60s", "--layer", "8/10m")
    g = bed.get(src)
    assert [x["count"] for x in g["layers"]] == [0, 0], g
    bed.send(src, 10)
    assert bed.counts()[src] == 16, "the 10m layer starts afresh: 8 more"


def test_layer_dropped_by_a_rule_change_starts_empty_when_put_back(bed):
    """The same for a rule: deleted, its sources fall back to the one global
    layer; added again, it is a new limit set, and its windows start empty."""
    src = "198.19.49.1"
    rule = ["198.19.49.0/24", "--layer", "100/60s", "--layer", "3/10m"]
    bed.nft_counters({src: saddr(src)})
    bed.load("--limit", 100, "--window", "60s", "--max-layers", 2)
    bed.xdp_ok("rule", "add", bed.rx_if, *rule)
    bed.send(src, 10)
    assert bed.counts()[src] == 3
    bed.xdp_ok("rule", "del", bed.rx_if, "198.19.49.0/24")
    bed.xdp_ok("rule", "add", bed.rx_if, *rule)
    assert [x["count"] for x in bed.get(src)["layers"]] == [0, 0]
    bed.send(src, 10)
    assert bed.counts()[src] == 6, "the 10m layer starts afresh: 3 more"


def test_dry_run_counts_what_a_deny_rule_would_drop(bed):
    src = "198.19.46.1"
    bed.nft_counters({src: saddr(src)})
    bed.load("--limit", 100, "--dry-run")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.46.0/24", "--deny")
    bed.send(src, 5)
    assert bed.counts()[src] == 5
    st = bed.stats()
    assert (st["denied"], st["would_drop"], st["dropped"]) == (5, 5, 0), st
    r = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"][0]
    assert (r["hits"], r["dropped"], r["would_drop"]) == (5, 0, 5), r
    assert "would drop 5 (dry run)" in bed.xdp_ok("rule", "list", bed.rx_if)


def test_aggregate_and_shared_windows_show_and_reset(bed):
    """Windows that are not a source's own: `get` and `top` show them, `reset`
    forgets them."""
    a, b, c, s1, s2 = "198.19.47.1", "198.19.47.2", "198.19.47.3", "198.19.48.1", "198.19.48.2"
    bed.nft_counters({x: saddr(x) for x in (c, s1, s2)})
    bed.load("--limit", 5, "--window", "60s", "--new-sources", "2/60s",
             "--on-table-full", "aggregate")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.48.0/24", "--layer", "4/60s", "--shared")
    bed.send([a, b], 1)
    bed.send(c, 10)                 # refused a slot: its /24's window
    assert bed.counts()[c] == 5
    g = bed.get(c)
    assert (g["key"], g["kind"], g["count"]) == ("198.19.47.0/24", "aggregate", 10), g
    bed.send(s1, 10)
    top = bed.top("--count", 10)
    kinds = {(x["key"], x.get("kind")) for x in top["sources"]}
    assert ("198.19.47.0/24", "aggregate") in kinds and ("198.19.48.0/24", "shared") in kinds, top
    assert top["active_sources"] == 2 and top["open_windows"] == 4, top

    assert "forgot the aggregate window of 198.19.47.0/24" in bed.xdp_ok("reset", bed.rx_if, c)
    assert "forgot the shared budget of 198.19.48.0/24" in bed.xdp_ok("reset", bed.rx_if, s2)
    bed.send(c, 10)
    bed.send(s2, 10)
    got = bed.counts()
    assert (got[c], got[s1], got[s2]) == (10, 4, 4), got
    assert "forgot 4 windows" in bed.xdp_ok("reset", bed.rx_if, "--all")
    assert bed.top()["open_windows"] == 0


# ---- the source table under a spoofed flood -------------------------------------

REAL = "198.18.5.1"
FLOOD = "198.19.32.1+2000"     # 198.19.32.1 .. 198.19.39.208: 8 /24s


@pytest.mark.parametrize("policy", [None, "pass", "drop", "aggregate"])
def test_spoofed_flood_and_a_real_source(bed, policy):
    """A real source sends, a spoofed flood from 2000 sources fills a 64-entry
    table, the real source sends again. Without a cap on new sources its
    window is evicted and it gets more than its limit; with one it gets
    exactly its limit, whatever happens to the flood."""
    limit = 20
    bed.nft_counters({"real": saddr(REAL), "flood": "ip saddr 198.19.32.0/21"})
    opts = ["--limit", limit, "--window", "60s", "--max-sources", 64]
    if policy:
        opts += ["--new-sources", "16/60s", "--on-table-full", policy]
    bed.load(*opts)
    bed.send(REAL, 10)
    bed.send([], 1, src_range=FLOOD)
    bed.send(REAL, 20)
    got, st = bed.counts(), bed.stats()

    if policy is None:
        # The documented failure mode the cap exists for: the flood churns
        # the table, and the real source's window goes with it (nearly
        # always: eviction may spare a slot seen more lately), so its
        # count restarts and it gets more than its limit.
        assert st["evictions"] > 1000, st
        if bed.get(REAL)["count"] < 30:
            assert got["real"] == 30, got      # 10, then a new window of 20
        else:
            assert got["real"] == limit, got   # its window survived
        return
    assert got["real"] == limit, (got, st)
    assert bed.get(REAL)["count"] == 30
    assert st["inserts"] <= 16 and st["refused_inserts"] >= 2000 - 16, st
    assert st["evictions"] == 0, st
    if policy == "pass":
        assert got["flood"] == 2000
    elif policy == "drop":
        assert got["flood"] == st["inserts"] - 1    # only the admitted ones
    else:
        # Each refused source is charged to its /24: 8 /24s, 20 each at most.
        assert st["aggregated"] == st["refused_inserts"]
        assert 8 * limit - 16 <= got["flood"] <= 8 * limit + 16, got
