# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The allow and deny lists (`xdp-rl lists`, allow-list and deny-list in a
config file): block lists far past the rules' 16 384, a listed prefix
judging its packets unless a rule of a longer (or the same) prefix does,
replaced whole and at once, a million prefixes loaded.

Ground truth is the receiver's nftables ingress counters (after XDP).
"""
import json
import os
import subprocess
import time

import pytest

import rlbed
from rlbed import run

FAULTS = os.path.join(rlbed.BUILD, "xdp-rl-faults")

DENIED = "198.19.41.1"        # on the deny list (its /24)
EXEMPT = "198.19.41.7"        # on the allow list (a /32 inside the denied /24)
RULED = "198.19.41.8"         # a /32 rule of 2 per hour inside the denied /24
ALLOWED = "198.19.42.1"       # on the allow list (its /24)
DENIED6 = "2001:2:0:41::1"    # on the deny list (its /64)
FREE = "198.19.43.1"          # on no list: the global limit of 5
# Under an allow list of ::/0 (all of IPv6, the IPv4-mapped ::ffff:0:0/96 too):
UNDER_DENIED = "198.19.80.1"  # on the deny list (its /24)
UNDER_FREE = "198.19.81.1"    # on no IPv4 prefix: the global limit of 5
UNDER_LATER = "198.19.82.1"   # the same, after the deny list is replaced
UNDER6 = "2001:2:0:80::1"     # on the allow list (::/0)
# Under a deny list of ::/8 (a bogon, the IPv4-mapped ::ffff:0:0/96 in it):
BOGON_DENIED = "198.19.84.1"  # on the deny list (its /24)
BOGON_FREE = "198.19.85.1"    # on no IPv4 prefix: the global limit of 5
BOGON6 = "2001:2:0:85::1"     # outside ::/8: the global limit of 5


def saddr(s):
    return f"{'ip6' if ':' in s else 'ip'} saddr {s}"


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(f"{x}\n" for x in lines))
    return str(path)


def lists_json(bed):
    doc = bed.xdp_json("lists", bed.rx_if, "--json")
    return {x["list"]: x for x in doc["lists"]}


def load_listed(bed, tmp_path):
    bed.load("--limit", 5, "--window", "1h")
    bed.xdp_ok("rule", "add", bed.rx_if, f"{RULED}/32", "--layer", "2/1h")
    deny = write(tmp_path, "deny.netset", ["# a block list", "198.19.41.0/24 ; SBL1",
                                            "2001:2:0:41::/64", "198.19.41.0/24"])
    allow = write(tmp_path, "allow.txt", [EXEMPT, "198.19.42.0/24"])
    out = bed.xdp_ok("lists", bed.rx_if, "--deny", deny, "--allow", allow)
    assert out.splitlines() == [
        f"xdp-rl: {bed.rx_if}: allow list: 2 prefixes (2 IPv4, 0 IPv6) from {allow} (was 0)",
        f"xdp-rl: {bed.rx_if}: deny list: 2 prefixes (1 IPv4, 1 IPv6) from {deny} (was 0)",
    ], out
    return deny, allow


@pytest.mark.both_tables
@pytest.mark.kernels
def test_lists_judge_packets_beside_rules(bed, tmp_path):
    deny, allow = load_listed(bed, tmp_path)
    srcs = (DENIED, EXEMPT, RULED, ALLOWED, DENIED6, FREE)
    bed.nft_counters({s: saddr(s) for s in srcs})
    before = bed.stats()
    for s, n in ((DENIED, 5), (EXEMPT, 10), (RULED, 5), (ALLOWED, 10), (DENIED6, 3),
                 (FREE, 7)):
        bed.send(s, n)
    got = bed.counts()
    assert {s: got[s] for s in srcs} == {DENIED: 0, EXEMPT: 10, RULED: 2, ALLOWED: 10,
                                         DENIED6: 0, FREE: 5}, got
    st = bed.stats()
    assert st["denied"] - before["denied"] == 8, st
    assert st["allowed"] - before["allowed"] == 20, st
    lj = lists_json(bed)
    assert (lj["deny"]["matched_packets"], lj["deny"]["dropped_packets"]) == (8, 8), lj
    assert lj["allow"]["matched_packets"] == 20 and lj["deny"]["path"] == deny, lj
    assert (lj["deny"]["prefixes_v4"], lj["deny"]["prefixes_v6"]) == (1, 1), lj

    # What the commands say of a listed source.
    out = bed.xdp_ok("get", bed.rx_if, DENIED)
    assert out == (f"{DENIED}: denied by the deny list (198.19.41.0/24; see 'xdp-rl lists "
                   f"{bed.rx_if}')\n"), out
    g = bed.xdp_json("get", bed.rx_if, EXEMPT, "--json")
    assert (g["list"], g["list_prefix"]) == ("allow", f"{EXEMPT}/32"), g
    r = bed.xdp("charge", bed.rx_if, DENIED, 3)
    assert r.returncode == 1 and "denied by the deny list" in r.stderr, r
    st = bed.status()
    assert st["list_prefixes"] == {"allow": 2, "deny": 2}, st
    assert "lists    allow 2, deny 2 prefixes" in bed.xdp_ok("status", bed.rx_if)
    text = bed.xdp_ok("lists", bed.rx_if)
    assert f"deny list: 2 prefixes (1 IPv4, 1 IPv6) from {deny}; matched 8 packets, " \
        "dropped 8" in text, text

    # Kept by a replacement of the limiter (load --force): still looked up.
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 2048, "--force")
    bed.send(DENIED, 4)
    assert bed.counts()[DENIED] == 0, "the deny list outlives load --force"
    assert lists_json(bed)["deny"]["prefixes_v4"] == 1

    # --deny alone keeps the allow list; 'none' empties a list.
    out = bed.xdp_ok("lists", bed.rx_if, "--deny", "none")
    assert f"deny list: 0 prefixes (0 IPv4, 0 IPv6) (was 2)" in out, out
    assert f"allow list: 2 prefixes (2 IPv4, 0 IPv6) from {allow}\n" in out, out
    bed.send(DENIED, 7)
    assert bed.counts()[DENIED] == 5, "off the list: the global limit of 5"


@pytest.mark.both_tables
def test_an_ipv6_allow_of_all_allows_no_ipv4(bed, tmp_path):
    """IPv4 is listed in the trie both families share as ::ffff:0:0/96: an
    IPv6 prefix over that range (::/0, "all of IPv6") judges IPv6 only. An
    IPv4 source no IPv4 prefix holds is limited, not allowed; nothing that
    reads the lists sees what keeps it so."""
    bed.load("--limit", 5, "--window", "1h")
    allow = write(tmp_path, "all6.txt", ["::/0"])
    deny = write(tmp_path, "deny80.netset", ["198.19.80.0/24"])
    out = bed.xdp_ok("lists", bed.rx_if, "--allow", allow, "--deny", deny)
    assert out.splitlines() == [
        f"xdp-rl: {bed.rx_if}: allow list: 1 prefix (0 IPv4, 1 IPv6) from {allow} (was 0)",
        f"xdp-rl: {bed.rx_if}: deny list: 1 prefix (1 IPv4, 0 IPv6) from {deny} (was 0)",
    ], out
    srcs = (UNDER_DENIED, UNDER_FREE, UNDER_LATER, UNDER6)
    bed.nft_counters({s: saddr(s) for s in srcs})
    before = bed.stats()
    for s in ([UNDER_DENIED, UNDER_FREE], UNDER6):
        bed.send(s, 8)
    got = bed.counts()
    assert {s: got[s] for s in srcs} == {UNDER_DENIED: 0, UNDER_FREE: 5, UNDER_LATER: 0,
                                         UNDER6: 8}, got
    st = bed.stats()
    assert (st["allowed"] - before["allowed"], st["denied"] - before["denied"]) == (8, 8), st
    lj = lists_json(bed)
    assert (lj["allow"]["prefixes_v4"], lj["allow"]["prefixes_v6"]) == (0, 1), lj
    assert (lj["deny"]["prefixes_v4"], lj["deny"]["prefixes_v6"]) == (1, 0), lj
    assert (lj["allow"]["matched_packets"], lj["deny"]["matched_packets"]) == (8, 8), lj

    # What the commands say: the IPv4 source on no IPv4 prefix is on no list.
    g = bed.get(UNDER_FREE)
    assert "list" not in g and g["count"] == 8, g
    out = bed.xdp_ok("get", bed.rx_if, UNDER_FREE)
    assert "list" not in out, out
    assert bed.get(UNDER6)["list_prefix"] == "::/0"
    st = bed.status()
    assert st["list_prefixes"] == {"allow": 1, "deny": 1}, st
    assert f"allow-list {allow}\n" in bed.xdp_ok("config", bed.rx_if)

    # --deny alone: the allow list kept from the trie is ::/0 alone, and still
    # judges no IPv4.
    later = write(tmp_path, "deny83.netset", ["198.19.83.0/24"])
    out = bed.xdp_ok("lists", bed.rx_if, "--deny", later)
    assert f"allow list: 1 prefix (0 IPv4, 1 IPv6) from {allow}\n" in out, out
    for s in (UNDER_LATER, UNDER6):
        bed.send(s, 7)
    got = bed.counts()
    assert (got[UNDER_LATER], got[UNDER6]) == (5, 15), got
    assert bed.status()["list_prefixes"] == {"allow": 1, "deny": 1}


def test_an_ipv6_bogon_deny_denies_no_ipv4(bed, tmp_path):
    """The mirror: a deny list holding ::/8 (a bogon, over the IPv4-mapped
    ::ffff:0:0/96) and an IPv4 prefix, so that IPv4 is looked up: an IPv4
    source the IPv4 prefix does not hold is limited, not denied."""
    bed.load("--limit", 5, "--window", "1h")
    deny = write(tmp_path, "bogons.netset", ["::/8", "198.19.84.0/24"])
    bed.xdp_ok("lists", bed.rx_if, "--deny", deny)
    srcs = (BOGON_DENIED, BOGON_FREE, BOGON6)
    bed.nft_counters({s: saddr(s) for s in srcs})
    for s in ([BOGON_DENIED, BOGON_FREE], BOGON6):
        bed.send(s, 7)
    got = bed.counts()
    assert {s: got[s] for s in srcs} == {BOGON_DENIED: 0, BOGON_FREE: 5, BOGON6: 5}, got
    assert lists_json(bed)["deny"]["matched_packets"] == 7
    g = bed.get(BOGON_FREE)
    assert "list" not in g and g["count"] == 7, g
    out = bed.xdp_ok("charge", bed.rx_if, BOGON_FREE, 1)
    assert f"charged 1 to {BOGON_FREE}/32" in out, out
    assert bed.status()["list_prefixes"] == {"allow": 0, "deny": 2}


def test_bad_list_files_change_nothing(bed, tmp_path):
    deny, allow = load_listed(bed, tmp_path)
    before = lists_json(bed)
    cases = [
        (["198.19.50.1/24"], "bad.netset:1: invalid prefix '198.19.50.1/24': bits set past "
                             "/24 (did you mean 198.19.50.0/24?)"),
        (["# ok", "::ffff:198.19.50.1"], "bad.netset:2: invalid prefix '::ffff:198.19.50.1': "
                                         "an IPv4-mapped address"),
        (["198.19.50.0/24 198.19.51.0/24"], "bad.netset:1: '198.19.51.0/24' after the prefix "
                                            "(one prefix a line)"),
        (["not-an-address"], "bad.netset:1: invalid prefix 'not-an-address'"),
    ]
    for lines, why in cases:
        path = write(tmp_path, "bad.netset", lines)
        r = bed.xdp("lists", bed.rx_if, "--deny", path)
        assert r.returncode == 2 and why in r.stderr and "no list was changed" in r.stderr, r
        assert lists_json(bed) == before
    r = bed.xdp("lists", bed.rx_if, "--deny", str(tmp_path / "missing"))
    assert r.returncode == 2 and "No such file or directory" in r.stderr, r
    # A prefix on both lists: refused, naming both lines.
    both = write(tmp_path, "both.txt", ["198.19.60.0/24", "198.19.41.0/24"])
    r = bed.xdp("lists", bed.rx_if, "--allow", both)
    assert r.returncode == 1, r
    assert (f"198.19.41.0/24 is on both the allow list ({both}:2) and the deny list "
            f"(in force, from {deny})") in r.stderr, r
    assert lists_json(bed) == before
    for argv, word in ((["--deny", ""], "empty --deny"), (["--json", "--deny", deny], "--json"),
                       (["--deny", deny, "--deny", deny], "given twice")):
        r = bed.xdp("lists", bed.rx_if, *argv)
        assert r.returncode == 2 and word in r.stderr, (argv, r)


def test_a_replacement_is_whole_and_at_once(bed, tmp_path):
    """A flood from a listed source while its list is replaced again and
    again (the source on every version, other prefixes coming and going):
    no packet passes, so none saw a trie half built or none at all."""
    deny, allow = load_listed(bed, tmp_path)
    versions = [write(tmp_path, f"v{i}.netset",
                      ["198.19.41.0/24"] + [f"198.18.{i}.{j}" for j in range(200)])
                for i in range(4)]
    bed.nft_counters({"listed": saddr(DENIED)})
    replaced, sent, floods = 0, 0, 0
    # Floods of 20000 frames, each under replacements, until three replacements
    # ran under a flood (a fast machine may send one flood in two of them).
    while replaced < 3 and floods < 5:
        floods += 1
        flood = subprocess.Popen(bed.send_argv(DENIED, 20000), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while flood.poll() is None and time.monotonic() < deadline:
                bed.xdp_ok("lists", bed.rx_if, "--deny", versions[replaced % len(versions)])
                replaced += 1
            out, err = flood.communicate(timeout=rlbed.SEND_DEADLINE + 15)
        finally:
            if flood.poll() is None:
                flood.kill()
                flood.wait()
        rep = json.loads(out)
        assert rep["sent"] > 0, rep
        sent += rep["sent"]
    assert replaced >= 3, (replaced, floods)
    assert bed.counts()["listed"] == 0, f"{replaced} replacements under {sent} frames"
    assert lists_json(bed)["deny"]["matched_packets"] >= sent - 10


def test_a_killed_replacement_leaves_the_old_lists_or_the_new(bed, tmp_path):
    deny, allow = load_listed(bed, tmp_path)
    bed.xdp_ok("set", bed.rx_if, "--limit", 1000)
    new = write(tmp_path, "new.netset", ["198.19.44.0/24"])
    trace = run([FAULTS, "-n", bed.rx, "lists", bed.rx_if, "--deny", new],
                env=dict(os.environ, XDP_RL_FAULT_TRACE="1"))
    assert trace.returncode == 0, trace
    points = [line for line in trace.stderr.splitlines() if "fault point" in line]
    assert any("lists: replaced (committed)" in p for p in points), points
    bed.nft_counters({"old": saddr(DENIED), "new": saddr("198.19.44.1")})
    for at in range(1, len(points) + 1):
        bed.xdp_ok("lists", bed.rx_if, "--deny", deny)
        r = run([FAULTS, "-n", bed.rx, "lists", bed.rx_if, "--deny", new],
                env=dict(os.environ, XDP_RL_FAULT_AT=str(at)))
        assert r.returncode == -9, (at, r)
        lj = lists_json(bed)["deny"]
        state = {deny: "old", new: "new"}.get(lj["path"])
        assert state, (at, lj)
        assert lj["prefixes_v4"] + lj["prefixes_v6"] == (2 if state == "old" else 1), (at, lj)
        c0 = bed.counts()
        bed.send([DENIED, "198.19.44.1"], 1)
        c1 = bed.counts()
        # The listed source of the state shown drops; the other's passes.
        assert (c1["old"] - c0["old"], c1["new"] - c0["new"]) == \
            ((0, 1) if state == "old" else (1, 0)), (at, state)


def test_lists_in_a_config_file(bed, tmp_path):
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 1024)
    deny = write(tmp_path, "deny.netset", ["198.19.41.0/24"])
    conf = tmp_path / "c.conf"
    base = (f"interface {bed.rx_if}\nlimit 5\nwindow 1h\nmax-sources 1024\n"
            f"table {bed.table}\n")
    conf.write_text(base + f"deny-list {deny}\n")
    out = bed.xdp_ok("apply", "--check", str(conf))
    assert ", deny list of 1 prefix\n" in out.splitlines()[0] + "\n", out
    assert f"would be: deny list: 1 prefix (1 IPv4, 0 IPv6) from {deny} (was 0)" in out, out
    out = bed.xdp_ok("apply", str(conf))
    assert out == (f"xdp-rl: {bed.rx_if}: deny list: 1 prefix (1 IPv4, 0 IPv6) from {deny} "
                   "(was 0)\n"), out
    assert bed.xdp_ok("apply", str(conf)) == f"xdp-rl: {bed.rx_if}: nothing to change\n"
    assert f"deny-list {deny}\n" in bed.xdp_ok("config", bed.rx_if)
    # The file changed: apply puts its prefixes in.
    write(tmp_path, "deny.netset", ["198.19.41.0/24", "198.19.45.0/24"])
    out = bed.xdp_ok("apply", str(conf))
    assert "deny list: 2 prefixes (2 IPv4, 0 IPv6)" in out and "(was 1 from" in out, out
    # A rule change and the lists in one apply; then a list file that cannot be read:
    # refused before anything changes.
    conf.write_text(base + f"deny-list {deny}\nrule 198.19.46.0/24 --deny\n")
    bed.xdp_ok("apply", str(conf))
    conf.write_text(base + f"deny-list {tmp_path}/missing\nrule 198.19.47.0/24 --deny\n")
    r = bed.xdp("apply", str(conf))
    assert r.returncode == 2 and "deny-list" in r.stderr and "No such file" in r.stderr, r
    rules = [x["prefix"] for x in bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]]
    assert rules == ["198.19.46.0/24"], rules
    # Left out of the file: the list is emptied.
    conf.write_text(base + "rule 198.19.46.0/24 --deny\n")
    out = bed.xdp_ok("apply", str(conf))
    assert "deny list: 0 prefixes (0 IPv4, 0 IPv6) (was 2 from" in out, out
    for bad, why in ((f"deny-list relative.netset\n", "one absolute path"),
                     (f"deny-list {deny}\ndeny-list {deny}\n", "a second 'deny-list'")):
        conf.write_text(base + bad)
        r = bed.xdp("apply", "--check", str(conf))
        assert r.returncode == 2 and why in r.stderr, r


def test_a_million_prefixes(bed, tmp_path):
    """A block list of a million prefixes (131 072 IPv4 /32s of 198.18.0.0/15
    and 868 928 IPv6 /112s of 2001:2::/48): read, put in and looked up; a
    listed source drops, one beside it passes. The time each step takes is
    printed (make bench measures the lookup's cost)."""
    bed.load("--limit", 5, "--window", "1h")
    path = tmp_path / "million.netset"
    n6 = 1000000 - 131072
    with open(path, "w") as f:
        for i in range(131072):
            f.write(f"198.{18 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}\n")
        for i in range(n6):
            f.write(f"2001:2:0:{i >> 16:x}:{i & 0xffff:x}::/112\n")
    def memory():
        doc = json.loads(rlbed.run_ok([rlbed.BIN, "status", "--all", "--json"]).stdout)
        ino = os.stat(f"/run/netns/{bed.rx}").st_ino
        (mine,) = [x for x in doc["limiters"] if x["netns"] == ino]
        return mine["memory_bytes"]

    before = memory()
    t = time.monotonic()
    out = bed.xdp_ok("lists", bed.rx_if, "--deny", str(path))
    took = time.monotonic() - t
    grown = memory() - before
    print(f"\nthe trie of a million prefixes holds {grown / 1e6:.0f} MB (memlock)")
    assert grown > 20e6, "the lists' trie, held by `lists` and not pinned, counts as memory"
    assert "deny list: 1000000 prefixes (131072 IPv4, 868928 IPv6)" in out, out
    print(f"a million prefixes put in force in {took:.1f} s")
    lj = lists_json(bed)["deny"]
    assert (lj["prefixes_v4"], lj["prefixes_v6"]) == (131072, n6), lj
    listed, beside = "2001:2:0:d:42::1", f"2001:2:0:{(n6 >> 16) + 1:x}::1"
    bed.nft_counters({"listed": saddr(listed), "beside": saddr(beside), "v4": saddr(FREE)})
    bed.send([listed, beside], 3)
    got = bed.counts()
    assert (got["listed"], got["beside"]) == (0, 3), got
    # FREE is in 198.19.0.0/16, listed whole: dropped.
    bed.send(FREE, 2)
    assert bed.counts()["v4"] == 0
    t = time.monotonic()
    bed.xdp_ok("lists", bed.rx_if, "--deny", "none")
    print(f"emptied in {time.monotonic() - t:.1f} s")
    bed.send(listed, 2)
    assert bed.counts()["listed"] == 2


def test_an_apply_of_lists_and_rules_killed_anywhere_is_whole(bed, tmp_path):
    """An apply that changes the lists and the rules, killed at every step:
    the next command leaves both as they were, or both as the file says."""
    bed.load("--limit", 1000, "--window", "1h", "--max-sources", 1024)
    base = (f"interface {bed.rx_if}\nlimit 1000\nwindow 1h\nmax-sources 1024\n"
            f"table {bed.table}\n")
    old_deny = write(tmp_path, "old.netset", ["198.19.41.0/24"])
    new_deny = write(tmp_path, "new.netset", ["198.19.44.0/24", "2001:2:0:44::/64"])
    old = tmp_path / "old.conf"
    old.write_text(base + f"deny-list {old_deny}\nrule 198.19.48.0/24 --deny\n")
    new = tmp_path / "new.conf"
    new.write_text(base + f"deny-list {new_deny}\nrule 198.19.49.0/24 --deny\n")
    bed.xdp_ok("apply", str(old))
    trace = run([FAULTS, "-n", bed.rx, "apply", str(new)],
                env=dict(os.environ, XDP_RL_FAULT_TRACE="1"))
    assert trace.returncode == 0, trace
    points = [line for line in trace.stderr.splitlines() if "fault point" in line]
    assert any("lists: replaced" in p for p in points), points
    seen = set()
    for at in range(1, len(points) + 1):
        bed.xdp_ok("apply", str(old))
        r = run([FAULTS, "-n", bed.rx, "apply", str(new)],
                env=dict(os.environ, XDP_RL_FAULT_AT=str(at)))
        assert r.returncode == -9, (at, r)
        bed.xdp_ok("status")  # finishes, or undoes, what the kill left
        rules = [x["prefix"] for x in bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]]
        deny = lists_json(bed)["deny"]
        state = ("old" if rules == ["198.19.48.0/24"] and deny["path"] == old_deny else
                 "new" if rules == ["198.19.49.0/24"] and deny["path"] == new_deny else None)
        assert state, (at, points[at - 1], rules, deny)
        seen.add(state)
    assert seen == {"old", "new"}, seen
