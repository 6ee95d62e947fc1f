# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The CLI of rates (--rate N/DUR --burst B) on a real limiter: load, set,
rule add, rules files and config files take a rate; status, rule list,
config, get and top show it (its tokens, its next pass, its episode's
drops); set --burst changes it live, keeping what each source owes; a
change between windows and a rate starts every source afresh; and every
refusal (with --limit, --window, --layer, --aligned, a fleet agent, charge,
reset --count, a burst too small for a frame, a rate too slow) exits
non-zero and changes nothing.

Ground truth is the receiver's nftables ingress counters (after XDP). What
must pass exactly is sent well within a unit's time: the exact tests count
bytes (--bytes) at 16 bytes a minute, so that a frame is 4 minutes of the
rate and none is earned back during a test.
"""
import re

import pytest

from rlbed import run

# What a source passes and what get, top, reset and charge say of it: on both tables.
pytestmark = pytest.mark.both_tables

A, B, C = "198.18.61.1", "198.18.61.2", "198.19.62.9"
RULE = "198.19.62.0/24"


def rules(*srcs):
    return {s: f"ip saddr {s}" for s in srcs}


def fails(bed, *args, code=None):
    """xdp-rl ARGS in the receiver, which must fail (with @code if given): its stderr."""
    r = bed.xdp(*args)
    assert r.returncode != 0, f"xdp-rl {' '.join(map(str, args))} succeeded: {r.stdout}"
    if code is not None:
        assert r.returncode == code, (args, r.returncode, r.stderr)
    assert r.stderr.strip(), (args, "no message")
    return r.stderr


def snapshot(bed):
    """What a refusal must leave alone: the settings, the rules, and A's state."""
    st = bed.status()
    for k in ("active_sources_v4", "active_sources_v6"):
        st.pop(k)
    g = bed.get(A)
    return (st, bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"],
            bed.xdp_ok("config", bed.rx_if), g["count"],
            [x.get("tokens") for x in g["layers"]])


def rate_layer(doc):
    assert len(doc["layers"]) == 1, doc
    lay = doc["layers"][0]
    assert lay["kind"] == "rate", doc
    return lay


def test_load_rate_is_shown_everywhere(bed, tmp_path):
    rf = tmp_path / "rules"
    rf.write_text(f"{RULE} --rate 10/1s --burst 5 --ban 1m\n"
                  "198.19.63.0/24 --layer 7/1s\n")
    out = bed.load("--rate", "100/1s", "--burst", 200, "--rules", rf)
    assert "rate 100/1s, burst 200 packets" in out, out
    st = bed.status()
    lay = rate_layer(st)
    assert (lay["rate"], lay["per_ms"], lay["burst"], lay["per"]) == (100, 1000, 200, "1s"), st
    # The precise clock while a rate is in force (the tick clock would pass more).
    assert st["clock"] == "monotonic", st
    assert st["alignment"] == "per-key", st
    text = bed.xdp_ok("status", bed.rx_if)
    assert re.search(r"^  limit +rate 100/1s, burst 200 packets, per key", text, re.M), text
    # rule list: pasted back, the same rule; its JSON says the layer is a rate.
    listed = bed.xdp_ok("rule", "list", bed.rx_if)
    assert f"{RULE} --rate 10/1s --burst 5 --ban 1m " in listed, listed
    assert "198.19.63.0/24 --layer 7/1s " in listed, listed
    doc = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    byp = {r["prefix"]: r for r in doc}
    r = rate_layer(byp[RULE])
    assert (r["rate"], r["burst"], r["per_ms"]) == (10, 5, 1000), r
    assert byp["198.19.63.0/24"]["layers"][0]["kind"] == "window", doc
    # config: the rate's two lines, no window's; applied back, nothing changes.
    conf = bed.xdp_ok("config", bed.rx_if)
    lines = conf.splitlines()
    assert "rate 100/1s" in lines and "burst 200" in lines, conf
    assert not [x for x in lines if re.match(r"(limit|window|layer) ", x)], conf
    assert f"rule {RULE} --rate 10/1s --burst 5 --ban 1m" in lines, conf
    path = tmp_path / "x.conf"
    path.write_text(conf)
    r = run(bed.argv("apply", path))
    assert r.returncode == 0 and "nothing to change" in r.stdout, (r.stdout, r.stderr)


FRAME = 64  # bytes of each frame sendpkts sends, as XDP counts them
SLOW = ["--bytes", "--rate", "16/1m"]  # a byte is 3.75 s of the rate, a frame 240 s


def frames(n):
    return n * FRAME


def test_rate_passes_the_burst_and_get_top_say_so(bed):
    bed.nft_counters(rules(A, B))
    bed.load(*SLOW, "--burst", frames(10))
    g = bed.get(A)
    lay = rate_layer(g)
    # Never seen: the whole burst, a pass now, nothing owed.
    assert (lay["tokens"], lay["next_pass_in_ms"], lay["dropped"], g["count"]) == \
        (frames(10), 0, 0, 0), g
    bed.send(A, 30)
    bed.send(B, 4)
    assert bed.stats()["passed_bytes"] == frames(14), (bed.stats(), "frames are not 64 bytes")
    assert bed.counts() == {A: 10, B: 4, "all": 14}, bed.counts()
    g = bed.get(A)
    lay = rate_layer(g)
    assert lay["tokens"] == 0 and lay["dropped"] == frames(20), g
    # The next byte: 3.75 s of the rate; the burst, 2400 s, is owed.
    assert 3_000 <= lay["next_pass_in_ms"] <= 3_750, g
    assert 2_390_000 <= lay["owes_nothing_in_ms"] <= 2_400_000, g
    assert g["count"] == lay["owes"] == frames(10) and "passed" not in g, g
    g = bed.get(B)
    assert (rate_layer(g)["tokens"], rate_layer(g)["dropped"]) == (frames(6), 0), g
    top = bed.top()
    assert top["active_sources"] == 2, top
    assert [s["key"] for s in top["sources"]] == [f"{A}/32", f"{B}/32"], top
    assert rate_layer(top["sources"][0])["tokens"] == 0, top
    text = bed.xdp_ok("get", bed.rx_if, A)
    assert f"0 of {frames(10)} bytes at once (rate 16/1m)" in text, text
    assert f"{frames(20)} dropped" in text, text
    # A plain reset: A owes nothing, its burst is whole again.
    bed.xdp_ok("reset", bed.rx_if, A)
    assert rate_layer(bed.get(A))["tokens"] == frames(10), bed.get(A)
    bed.send(A, 12)
    assert bed.counts()[A] == 20, bed.counts()


# On every kernel of the matrix (a byte rate of 16/1m: no timing to miss under TCG).
@pytest.mark.kernels
def test_set_burst_live_keeps_what_sources_owe(bed):
    bed.nft_counters(rules(A))
    bed.load(*SLOW, "--burst", frames(3))
    bed.send(A, 5)
    assert bed.counts()[A] == 3
    out = bed.xdp_ok("set", bed.rx_if, "--burst", frames(6))
    assert f"rate 16/1m, burst {frames(6)} bytes" in out and "restarted" not in out, out
    assert rate_layer(bed.status())["burst"] == frames(6)
    # It owes 3 frames still: 3 of the 6 left (and a byte or two earned back).
    assert frames(3) <= rate_layer(bed.get(A))["tokens"] < frames(3) + 4, bed.get(A)
    bed.send(A, 5)
    assert bed.counts()[A] == 6, bed.counts()
    # A new rate (same shape): what A owes stays, so it passes nothing more.
    out = bed.xdp_ok("set", bed.rx_if, *SLOW[1:], "--burst", frames(6))
    assert "restarted" not in out, out
    bed.send(A, 3)
    assert bed.counts()[A] == 6, bed.counts()


def test_windows_and_rate_switch_start_afresh(bed):
    bed.nft_counters(rules(A))
    bed.load("--limit", 5, "--window", "1h")
    bed.send(A, 7)
    assert bed.counts()[A] == 5
    out = bed.xdp_ok("set", bed.rx_if, "--rate", "1/4s", "--burst", 5)
    assert "rate 1/4s, burst 5 packets" in out, out
    assert "between windows and a rate" in out, out
    bed.send(A, 7)
    assert bed.counts()[A] == 10, bed.counts()
    out = bed.xdp_ok("set", bed.rx_if, "--limit", 5, "--window", "1h")
    assert "between windows and a rate" in out, out
    assert bed.status()["layers"][0]["kind"] == "window"
    bed.send(A, 7)
    assert bed.counts()[A] == 15, bed.counts()


def test_apply_switches_between_windows_and_a_rate(bed, tmp_path):
    bed.nft_counters(rules(A))
    path = tmp_path / f"{bed.rx_if}.conf"
    path.write_text(f"interface {bed.rx_if}\nlimit 5\nwindow 1h\ntable {bed.table}\n")
    bed.xdp_ok("apply", path)
    bed.send(A, 6)
    path.write_text(f"interface {bed.rx_if}\nrate 1/4s\nburst 5\ntable {bed.table}\n")
    out = bed.xdp_ok("apply", path)
    assert "rate 1/4s, burst 5 (was limit 5, window 1h)" in out, out
    assert "between windows and a rate" in out, out
    assert rate_layer(bed.status())["burst"] == 5
    bed.send(A, 6)
    assert bed.counts()[A] == 10, bed.counts()
    path.write_text(f"interface {bed.rx_if}\nrate 1/4s\nburst 7\ntable {bed.table}\n")
    out = bed.xdp_ok("apply", path)
    assert "burst 7 (was burst 5)" in out and "afresh" not in out, out
    # What A owes stays: of the 7, what it earned back since, and 2 more.
    left = rate_layer(bed.get(A))["tokens"]
    assert 2 <= left <= 4, bed.get(A)
    bed.send(A, 6)
    assert bed.counts()[A] == 10 + left, (bed.counts(), left)
    # Defaults: "rate" alone has a burst of N.
    path.write_text(f"interface {bed.rx_if}\nrate 3/1s\ntable {bed.table}\n")
    bed.xdp_ok("apply", path)
    assert rate_layer(bed.status())["burst"] == 3


def test_refusals_change_nothing(bed, tmp_path):
    # Nothing loaded: each refused load leaves nothing behind.
    for args, says in (
            (["--rate", "100/1s", "--limit", 5], "--rate or --limit/--window"),
            (["--rate", "100/1s", "--layer", "5/1s"], "--rate or --layer"),
            (["--rate", "100/1s", "--aligned"], "no windows to align"),
            (["--rate", "1/1h"], "slower than the slowest rate"),
            (["--rate", "100/1s", "--burst", 10**8], "to earn back"),
            (["--rate", "1000/1s", "--burst", 59, "--bytes"], "can never pass a frame"),
            (["--burst", 5], "--burst goes with --rate"),
            (["--rate", "100"], "invalid --rate '100'")):
        err = fails(bed, "load", bed.rx_if, *args, code=2)
        assert says in err, (args, err)
    assert not bed.limiters(), bed.limiters()
    # A burst below a full frame is a warning, as a limit's is.
    r = bed.xdp("load", bed.rx_if, "--rate", "1000/1s", "--burst", 600, "--bytes", "--table",
                bed.table)
    assert r.returncode == 0 and "burst of 600 bytes" in r.stderr, r.stderr
    bed.xdp_ok("unload", bed.rx_if)

    # A is never sent to: its state (a whole burst) is the same until a refusal changes it.
    bed.load("--rate", "1/4s", "--burst", 4)
    before = snapshot(bed)
    for args, code, says in (
            (["set", bed.rx_if, "--limit", 5], 2, "the limit is a rate"),
            (["set", bed.rx_if, "--window", "2s"], 2, "the limit is a rate"),
            (["set", bed.rx_if, "--aligned"], 2, "no windows to align"),
            (["set", bed.rx_if, "--rate", "5/1s", "--layer", "5/1s"], 2, "--rate or --layer"),
            (["set", bed.rx_if, "--burst", 0], 2, "invalid --burst"),
            (["set", bed.rx_if, "--rate", "1/1h"], 2, "slower than the slowest"),
            (["charge", bed.rx_if, A, 2], 1, "keeps no count to set"),
            (["reset", bed.rx_if, A, "--count", 3], 1, "keeps no count to set"),
            (["rule", "add", bed.rx_if, RULE, "--rate", "5/1s", "--layer", "5/1s"], 2,
             "--rate or --layer"),
            (["rule", "add", bed.rx_if, RULE, "--burst", 5, "--layer", "5/1s"], 2,
             "--burst goes with --rate"),
            (["rule", "add", bed.rx_if, RULE, "--rate", "5/1s", "--burst", "x"], 2,
             "invalid --burst"),
            (["fleet", bed.rx_if, "--redis", "127.0.0.1:1"], 1, "a rate is local")):
        err = fails(bed, *args, code=code)
        assert says in err, (args, err)
        assert snapshot(bed) == before, args
    bad = tmp_path / "bad.conf"
    bad.write_text(f"interface {bed.rx_if}\nrate 1/4s\nlimit 4\n")
    err = fails(bed, "apply", bad, code=2)
    assert "bad.conf:3" in err and "rate or limit/window" in err, err
    assert snapshot(bed) == before

    # Windows in force: --burst alone has no rate to change; aligned refuses a rate rule.
    bed.xdp_ok("set", bed.rx_if, "--limit", 5, "--window", "1h", "--aligned")
    before = snapshot(bed)
    for args, code, says in (
            (["set", bed.rx_if, "--burst", 5], 2, "--burst is a rate's"),
            (["set", bed.rx_if, "--rate", "1/4s"], 2, "no windows to align"),
            (["rule", "add", bed.rx_if, RULE, "--rate", "1/4s"], 1, "windows are aligned")):
        err = fails(bed, *args, code=code)
        assert says in err, (args, err)
        assert snapshot(bed) == before, args


def test_a_rate_rule_keeps_the_precise_clock(bed):
    bed.load("--limit", 100000, "--window", "1h")
    if bed.status()["clock"] != "monotonic-coarse":
        pytest.skip("the kernel's coarse clock does not tick here: nothing to see")
    out = bed.xdp_ok("rule", "add", bed.rx_if, RULE, "--rate", "20/1m", "--shared")
    assert f"added rule {RULE} rate 20/1m burst 20 shared" in out, out
    assert bed.status()["clock"] == "monotonic"
    bed.xdp_ok("rule", "del", bed.rx_if, RULE)
    assert bed.status()["clock"] == "monotonic-coarse"
    # A shared rate: get of a source in it shows the rule's budget.
    bed.xdp_ok("rule", "add", bed.rx_if, RULE, "--rate", "1/4s", "--burst", 3, "--shared")
    bed.nft_counters(rules(C))
    bed.send(C, 5)
    assert bed.counts()[C] == 3, bed.counts()
    g = bed.get(C)
    assert g.get("kind") == "shared" and rate_layer(g)["dropped"] == 2, g
    err = fails(bed, "charge", bed.rx_if, C, code=1)
    assert "keeps no count to set" in err, err
