# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What a budget is for (load --key src|dst|src,dport|dst,dport), on real
frames: a budget per service (an address and a destination port), per
destination, and port 0 for what has no port to read (ICMP, later
fragments); get, reset and charge with the PORT after the address; top,
events, status and config showing the key; config files with a `key` row;
the refusal of a port with --v6-prefix above 112; load --force with
another key.

Ground truth is the receiver's nftables ingress counters (after XDP: what
XDP passed). Sources are in 198.19.0.0/16 and 2001:2::/48 off the
receiver's on-link /64; destinations other than the receiver's own
(198.18.0.2, 2001:2::2) are in the same ranges, and reach XDP all the same
(frames are sent to the receiver's MAC).
"""
import json
import os
import subprocess
import time

import pytest

import rlbed

# Each key's budget and what get/top/reset/charge say of it: on both tables.
pytestmark = pytest.mark.both_tables

EXIT_USAGE = 2  # user/lib/log.h


def fails(bed, *args, code=EXIT_USAGE, word=None):
    """xdp-rl ARGS in the receiver, which must exit @code (saying @word): its stderr."""
    r = bed.xdp(*args)
    assert r.returncode == code, (args, r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip(), (args, "no message")
    if word:
        assert word in r.stderr, (args, r.stderr)
    return r.stderr


def get(bed, addr, *port):
    return bed.xdp_json("get", bed.rx_if, addr, *port, "--json")


def key_of(bed):
    """The limiter's key, as `xdp-rl config` prints it (its `key` row)."""
    rows = [x for x in bed.xdp_ok("config", bed.rx_if).splitlines() if x.startswith("key ")]
    assert len(rows) == 1, rows
    return rows[0][4:]


def counted(bed, addr, *port):
    """The count of @addr's (and @port's) window, as `get --json` says."""
    return get(bed, addr, *port)["count"]


# ---- a budget per service ----------------------------------------------------------

@pytest.mark.kernels
def test_a_budget_per_address_and_port(bed):
    """--key src,dport: a client's 443 and 22 have a budget each, a second
    client budgets of its own; get with the PORT shows each count."""
    a, b = "198.19.170.1", "198.19.170.2"
    bed.nft_counters({f"{s}:{p}": f"ip saddr {s} udp dport {p}"
                      for s in (a, b) for p in (443, 22)})
    bed.load("--key", "src,dport", "--limit", 4, "--window", "60s")
    for s in (a, b):
        for p in (443, 22):
            bed.send(s, 10, dport=p)
    got = bed.counts()
    assert {k: v for k, v in got.items() if k != "all"} == {
        f"{a}:443": 4, f"{a}:22": 4, f"{b}:443": 4, f"{b}:22": 4}, got
    for s in (a, b):
        for p in (443, 22):
            g = get(bed, s, p)
            assert (g["key"], g["port"], g["count"], g["limit"]) == (f"{s}/32", p, 10, 4), g
            assert (g["passed"], g["dropped"]) == (4, 6), g
    # The port is the service's, not the protocol's: TCP to 443 is on the same budget.
    bed.nft_counters({"tcp443": f"ip saddr {a} tcp dport 443",
                      "a8443": f"ip saddr {a} udp dport 8443"}, table="e2e2")
    bed.send(a, 3, proto="tcp", dport=443, flags="S")
    bed.send(a, 6, dport=8443)
    got = bed.counts()
    assert (got["tcp443"], got["a8443"]) == (0, 4), got
    assert counted(bed, a, 443) == 13 and counted(bed, a, 8443) == 6
    assert counted(bed, a, 53) == 0, "a port never sent to has no window"


def test_a_budget_per_ipv6_prefix_and_port(bed):
    """IPv6 under --key src,dport: two sources of one /64 share a budget per
    port; another /64 has its own. --v6-prefix 112 keeps the port apart from
    the address: sources of one /112 share, the next /112 does not."""
    s1, s2, s3 = "2001:2:0:171::1", "2001:2:0:171::2", "2001:2:0:172::1"
    bed.nft_counters({"64:443": "ip6 saddr 2001:2:0:171::/64 udp dport 443",
                      "64:22": "ip6 saddr 2001:2:0:171::/64 udp dport 22",
                      "s3:443": f"ip6 saddr {s3} udp dport 443"})
    bed.load("--key", "src,dport", "--limit", 5, "--window", "60s")
    for s in (s1, s2):
        bed.send(s, 4, dport=443)
        bed.send(s, 4, dport=22)
    bed.send(s3, 7, dport=443)
    got = bed.counts()
    assert (got["64:443"], got["64:22"], got["s3:443"]) == (5, 5, 5), got
    g = get(bed, "2001:2:0:171::99", 443)
    assert (g["key"], g["port"], g["count"]) == ("2001:2:0:171::/64", 443, 8), g
    assert counted(bed, s2, 22) == 8 and counted(bed, s3, 443) == 7
    assert counted(bed, s3, 22) == 0

    # /112: the key's last 16 bits hold the port, the address's are masked off.
    bed.load("--force", "--key", "src,dport", "--v6-prefix", 112, "--limit", 5,
             "--window", "60s")
    p1, p2, p3 = "2001:2:0:173::1:1", "2001:2:0:173::1:1bb", "2001:2:0:173::2:1"
    bed.nft_counters({"a:443": "ip6 saddr 2001:2:0:173::1:0/112 udp dport 443",
                      "a:1": "ip6 saddr 2001:2:0:173::1:0/112 udp dport 1",
                      "b:443": "ip6 saddr 2001:2:0:173::2:0/112 udp dport 443"},
                     table="e2e112")
    bed.send([p1, p2], 4, dport=443)
    bed.send([p1, p2], 4, dport=1)
    bed.send(p3, 7, dport=443)
    got = bed.counts()
    assert (got["a:443"], got["a:1"], got["b:443"]) == (5, 5, 5), got
    g = get(bed, p2, 443)
    assert (g["key"], g["port"], g["count"]) == ("2001:2:0:173::1:0/112", 443, 8), g
    assert counted(bed, p1, 1) == 8 and counted(bed, p3, 443) == 7
    # What charge puts in is the datapath's window: the same key, port and all.
    bed.xdp_ok("charge", bed.rx_if, "2001:2:0:173::2:ffff", 53, 4)
    bed.nft_counters({"b:53": "ip6 saddr 2001:2:0:173::2:0/112 udp dport 53"}, table="e2e53")
    bed.send(p3, 3, dport=53)
    assert bed.counts()["b:53"] == 1
    assert counted(bed, p3, 53) == 7


# ---- a budget per destination -------------------------------------------------------

def test_a_budget_per_destination(bed):
    """--key dst: many sources to one destination share its budget; two
    destinations have two. Rules match the destination: an allowed
    destination passes whatever sends to it, an allowed source is not."""
    d1, d2, d6a, d6b = "198.18.0.2", "198.19.180.1", "2001:2::2", "2001:2:0:180::1"
    bed.nft_counters({"d1": f"ip daddr {d1}", "d2": f"ip daddr {d2}",
                      "d6a": f"ip6 daddr {d6a}", "d6b": f"ip6 daddr {d6b}",
                      "d3": "ip daddr 198.19.181.1", "d4": "ip daddr 198.19.182.1"})
    bed.load("--key", "dst", "--limit", 5, "--window", "60s")
    assert key_of(bed) == "dst"
    bed.send([], 1, src_range="198.19.183.0+20", dst=d1)
    bed.send([], 1, src_range="198.19.183.0+20", dst=d2)
    bed.send([], 1, src_range="2001:2:0:183::+20", dst=d6a)
    bed.send([], 1, src_range="2001:2:0:183::+20", dst=d6b)
    got = bed.counts()
    assert (got["d1"], got["d2"], got["d6a"], got["d6b"]) == (5, 5, 5, 5), got
    g = get(bed, d1)
    assert (g["key"], g["count"]) == (f"{d1}/32", 20) and "port" not in g, g
    g = get(bed, d6b)
    assert (g["key"], g["count"]) == ("2001:2:0:180::/64", 20), g
    assert counted(bed, "198.19.183.1") == 0, "no source has a window of its own"

    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.181.0/24", "--allow")
    bed.send([], 1, src_range="198.19.184.0+20", dst="198.19.181.1")
    bed.send("198.19.181.7", 20, dst="198.19.182.1")
    got = bed.counts()
    assert got["d3"] == 20, ("the allowed destination passes all", got)
    assert got["d4"] == 5, ("an allowed source is not allowed: its destination's budget", got)


def test_a_budget_per_destination_and_port(bed):
    """--key dst,dport: a service on a destination has its budget, whoever sends."""
    bed.nft_counters({"443": "ip daddr 198.18.0.2 udp dport 443",
                      "53": "ip daddr 198.18.0.2 udp dport 53",
                      "o443": "ip daddr 198.19.185.1 udp dport 443"})
    bed.load("--key", "dst,dport", "--limit", 3, "--window", "60s")
    bed.send([], 1, src_range="198.19.186.0+10", dport=443)
    bed.send([], 1, src_range="198.19.186.0+10", dport=53)
    bed.send([], 1, src_range="198.19.186.0+10", dport=443, dst="198.19.185.1")
    got = bed.counts()
    assert (got["443"], got["53"], got["o443"]) == (3, 3, 3), got
    g = get(bed, "198.18.0.2", 53)
    assert (g["key"], g["port"], g["count"]) == ("198.18.0.2/32", 53, 10), g
    assert counted(bed, "198.19.185.1", 443) == 10 and counted(bed, "198.19.185.1", 53) == 0


# ---- port 0 --------------------------------------------------------------------------

# Fragmented datagrams whose later fragment has 443 where a port would be
# (its first four bytes 00 00 01 bb): a later fragment must still be port 0.
# sendpkts' own payload is zeros, which a misread port would take for 0 too.
POISONED = """
import json, os, socket, sys
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
import sendpkts as sp
iface, mac, src, dst, dport, count = sys.argv[2:8]
assert sp.allowed(src) and sp.allowed(dst) and 0 < int(count) <= 100
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
me, to, v6 = s.getsockname()[4], sp.mac_bytes(mac), ":" in src
payload = bytes([0, 0, 1, 0xbb]) * 8
sent = 0
for n in range(int(count)):
    make = sp.ipv6_packets if v6 else sp.ipv4_packets
    for l3 in make(src, dst, payload, "udp", int(dport), "", 8, 100 + n):
        s.send(sp.l2(to, me, v6, [], l3))
    sent += 1
print(json.dumps({"sent": sent}))
"""


def send_poisoned(bed, src, count, dport):
    """@count datagrams from @src to @dport, each as two fragments, the later
    one with 443 where a port would be."""
    dst = "2001:2::2" if ":" in src else "198.18.0.2"
    r = rlbed.run_ok(["ip", "netns", "exec", bed.tx, rlbed.PY, "-c", POISONED, rlbed.ROOT,
                      bed.tx_if, bed.rx_mac, src, dst, dport, count])
    assert json.loads(r.stdout)["sent"] == count, r.stdout

def test_what_has_no_port_shares_port_0(bed):
    """Under --key src,dport, ICMP and later fragments have no port to read:
    one budget per address (port 0), which does not eat a port's budget. A
    first fragment carries its port and is charged to it."""
    s, t = "198.19.190.1", "198.19.190.2"
    later = "ip frag-off & 0x1fff != 0"
    bed.nft_counters({"icmp": f"ip saddr {s} ip protocol icmp",
                      "later": f"ip saddr {s} {later}",
                      "443": f"ip saddr {s} udp dport 443",
                      "53": f"ip saddr {s} udp dport 53",
                      "t-later": f"ip saddr {t} {later}",
                      "t-first": f"ip saddr {t} udp dport 443"})
    bed.load("--key", "src,dport", "--limit", 4, "--window", "1h")
    bed.send(s, 6, proto="icmp")
    assert bed.counts()["icmp"] == 4
    # Fragmented datagrams to 443: first fragments on 443, later ones on port 0 (spent).
    bed.send(s, 3, dport=443, fragment=8)
    got = bed.counts()
    assert (got["443"], got["later"]) == (3, 0), got
    bed.send(s, 2, dport=443)
    bed.send(s, 5, dport=53)
    got = bed.counts()
    assert (got["443"], got["53"]) == (4, 4), ("ports keep their budgets", got)
    assert (counted(bed, s, 0), counted(bed, s, 443), counted(bed, s, 53)) == (9, 5, 5)
    g = get(bed, s, 0)
    assert (g["key"], g["port"]) == (f"{s}/32", 0), g
    # Another address has a port 0 of its own.
    bed.send(t, 6, dport=443, fragment=8)
    got = bed.counts()
    assert (got["t-first"], got["t-later"]) == (4, 4), got
    assert counted(bed, t, 0) == 6 and counted(bed, t, 443) == 6

    # A later fragment that looks as if it held port 443 is charged to port 0.
    u = "198.19.190.3"
    bed.nft_counters({"first": f"ip saddr {u} udp dport 53",
                      "later": f"ip saddr {u} {later}"}, table="poisoned")
    send_poisoned(bed, u, 6, 53)
    got = bed.counts()
    assert (got["first"], got["later"]) == (4, 4), got
    assert (counted(bed, u, 53), counted(bed, u, 0), counted(bed, u, 443)) == (6, 6, 0)


def test_what_has_no_port_shares_port_0_ipv6(bed):
    s = "2001:2:0:191::1"
    bed.nft_counters({"icmp": f"ip6 saddr {s} meta l4proto icmpv6",
                      "later": f"ip6 saddr {s} frag frag-off != 0",
                      "first": f"ip6 saddr {s} frag frag-off 0",
                      "22": f"ip6 saddr {s} udp dport 22"})
    bed.load("--key", "src,dport", "--limit", 4, "--window", "1h")
    bed.send(s, 3, proto="icmpv6")
    bed.send(s, 5, dport=443, fragment=8)
    bed.send(s, 6, dport=22)
    got = bed.counts()
    assert (got["icmp"], got["first"], got["later"], got["22"]) == (3, 4, 1, 4), got
    g = get(bed, "2001:2:0:191::77", 0)
    assert (g["key"], g["port"], g["count"]) == ("2001:2:0:191::/64", 0, 8), g
    assert counted(bed, s, 443) == 5 and counted(bed, s, 22) == 6

    u = "2001:2:0:192::1"
    bed.nft_counters({"first": f"ip6 saddr {u} frag frag-off 0",
                      "later": f"ip6 saddr {u} frag frag-off != 0"}, table="poisoned")
    send_poisoned(bed, u, 6, 53)
    got = bed.counts()
    assert (got["first"], got["later"]) == (4, 4), got
    assert (counted(bed, u, 53), counted(bed, u, 0), counted(bed, u, 443)) == (6, 6, 0)


def test_the_default_key_is_the_source_alone(bed):
    """Without --key, ports do not split a source's budget; get takes no PORT."""
    a = "198.19.192.1"
    bed.nft_counters({"a": f"ip saddr {a}"})
    bed.load("--limit", 4, "--window", "1h")
    assert key_of(bed) == "src"
    bed.send(a, 3, dport=443)
    bed.send(a, 3, dport=22)
    bed.send(a, 3, proto="icmp")
    assert bed.counts()["a"] == 4
    g = get(bed, a)
    assert (g["key"], g["count"]) == (f"{a}/32", 9) and "port" not in g, g
    fails(bed, "get", bed.rx_if, a, 443, word="unexpected argument")
    fails(bed, "reset", bed.rx_if, a, 443, word="unexpected argument")
    top = bed.top()
    assert [(x["key"], x["count"]) for x in top["sources"]] == [(f"{a}/32", 9)], top
    assert "port" not in top["sources"][0], top


# ---- the CLI ---------------------------------------------------------------------------

def test_get_reset_and_charge_take_the_port(bed):
    """charge, reset and get name a window by ADDRESS and PORT; a missing or
    bad PORT is a usage error that changes nothing; reset of one port leaves
    the others; what they did is what the datapath then passes."""
    a, b = "198.19.193.1", "198.19.193.2"
    bed.nft_counters({f"{p}": f"ip saddr {a} udp dport {p}" for p in (443, 22, 53)} |
                     {"icmp": f"ip saddr {a} ip protocol icmp"})
    bed.load("--key", "src,dport", "--limit", 5, "--window", "1h")
    out = bed.xdp_ok("charge", bed.rx_if, a, 443, 2)
    assert f"{a}/32 port 443" in out, out
    bed.xdp_ok("charge", bed.rx_if, a, 22)
    bed.xdp_ok("charge", bed.rx_if, a, 0, 4)
    assert (counted(bed, a, 443), counted(bed, a, 22), counted(bed, a, 0)) == (2, 1, 4)
    assert "198.19.193.1/32 port 22 " in bed.xdp_ok("get", bed.rx_if, a, 22)

    for cmd in (["get", bed.rx_if, a], ["reset", bed.rx_if, a], ["charge", bed.rx_if, a]):
        fails(bed, *cmd, word="give the PORT after the ADDRESS")
    for bad in ("70000", "abc", "65536", "-"):
        for cmd in ("get", "reset", "charge"):
            fails(bed, cmd, bed.rx_if, a, bad, word="invalid PORT")
    fails(bed, "get", bed.rx_if, a, 443, 1, word="unexpected argument")
    fails(bed, "reset", bed.rx_if, a, 443, 1, word="unexpected argument")
    fails(bed, "charge", bed.rx_if, a, 443, 1, 1, word="unexpected argument")
    assert (counted(bed, a, 443), counted(bed, a, 22), counted(bed, a, 0)) == (2, 1, 4), \
        "a usage error changes nothing"

    out = bed.xdp_ok("reset", bed.rx_if, a, 443)
    assert f"{a}/32 port 443" in out, out
    assert (counted(bed, a, 443), counted(bed, a, 22), counted(bed, a, 0)) == (0, 1, 4)
    bed.xdp_ok("reset", bed.rx_if, a, 22, "--count", 3)
    assert counted(bed, a, 22) == 3
    bed.send(a, 10, dport=443)
    bed.send(a, 10, dport=22)
    bed.send(a, 10, dport=53)
    bed.send(a, 10, proto="icmp")
    got = bed.counts()
    assert (got["443"], got["22"], got["53"], got["icmp"]) == (5, 2, 5, 1), got

    # top --json: one entry per address and port, each with its port.
    bed.xdp_ok("charge", bed.rx_if, b, 8080, 7)
    top = bed.top("--count", 10)
    rows = {(x["key"], x["port"]): x["count"] for x in top["sources"]}
    assert rows == {(f"{a}/32", 443): 10, (f"{a}/32", 22): 13, (f"{a}/32", 53): 10,
                    (f"{a}/32", 0): 14, (f"{b}/32", 8080): 7}, top
    assert top["sources"][0]["port"] == 0 and top["sources"][0]["count"] == 14, top
    text = bed.xdp_ok("top", bed.rx_if)
    assert f"{b}/32 port 8080 " in text and f"{a}/32 port 0 " in text, text
    out = bed.xdp_ok("reset", bed.rx_if, "--all")
    assert "forgot 5 windows" in out, out
    assert bed.top()["sources"] == []


def test_status_and_config_show_the_key(bed, tmp_path):
    """A config file with `key src,dport` loads a limiter keyed so; status
    and config show its key; config's text applies back as nothing to change;
    a key that cannot hold the port is refused, changing nothing; apply of
    another key restarts the windows under it."""
    a = "2001:2:0:194::1"
    path = tmp_path / "k.conf"
    path.write_text(f"interface {bed.rx_if}\nlimit 3\nwindow 1h\nkey src,dport\n"
                    f"v6-prefix 96\ntable {bed.table}\n")
    bed.xdp_ok("apply", str(path))
    st = bed.status()
    assert (st["key"], st["v6_prefix"]) == ("src,dport", 96), st
    text = bed.xdp_ok("status", bed.rx_if)
    assert "with the destination port (--key src,dport)" in text, text
    conf = bed.xdp_ok("config", bed.rx_if)
    assert "key src,dport" in conf.splitlines(), conf
    printed = tmp_path / "printed.conf"
    printed.write_text(conf)
    assert bed.xdp_ok("apply", str(printed)) == f"xdp-rl: {bed.rx_if}: nothing to change\n"

    bed.nft_counters({"443": f"ip6 saddr {a} udp dport 443", "22": f"ip6 saddr {a} udp dport 22"})
    bed.send(a, 5, dport=443)
    bed.send(a, 5, dport=22)
    got = bed.counts()
    assert (got["443"], got["22"]) == (3, 3), got
    g = get(bed, a, 443)
    assert (g["key"], g["port"], g["count"]) == ("2001:2:0:194::/96", 443, 5), g

    bad = tmp_path / "bad.conf"
    bad.write_text(conf.replace("v6-prefix 96", "v6-prefix 128"))
    fails(bed, "apply", str(bad), word="at most 112")
    assert bed.status()["v6_prefix"] == 96 and counted(bed, a, 443) == 5, "nothing changed"

    other = tmp_path / "dst.conf"
    other.write_text(conf.replace("key src,dport", "key dst"))
    out = bed.xdp_ok("apply", str(other))
    assert "key dst (was key src,dport)" in out and "every window restarted" in out, out
    assert bed.status()["key"] == "dst"
    assert "key dst" in bed.xdp_ok("config", bed.rx_if).splitlines()
    assert counted(bed, "2001:2::2") == 0
    bed.send(a, 5, dport=443)
    assert bed.counts()["443"] == 3 + 3, "a fresh budget, now the destination's"
    assert counted(bed, "2001:2::2") == 5


def test_a_port_needs_room_in_an_ipv6_key(bed):
    """--key src,dport or dst,dport with --v6-prefix above 112: refused with
    a usage error; nothing loaded, or the loaded limiter left as it was."""
    for key in ("src,dport", "dst,dport"):
        for pfx in (128, 113):
            fails(bed, "load", bed.rx_if, "--key", key, "--v6-prefix", pfx, "--limit", 3,
                  word="at most 112")
    assert bed.limiters() == [], "nothing was loaded"
    assert not bed.xdp_prog_id()
    fails(bed, "load", bed.rx_if, "--key", "src,port", word="invalid --key")

    a = "198.19.195.1"
    bed.load("--key", "src,dport", "--v6-prefix", 112, "--limit", 3, "--window", "1h")
    prog = bed.xdp_prog_id()
    bed.xdp_ok("charge", bed.rx_if, a, 443, 2)
    before = bed.status()
    fails(bed, "load", bed.rx_if, "--force", "--key", "src,dport", "--v6-prefix", 128,
          "--limit", 3, "--table", bed.table, word="at most 112")
    assert bed.status() == before and bed.xdp_prog_id() == prog
    assert counted(bed, a, 443) == 2
    # The other keys take any prefix.
    bed.load("--force", "--key", "dst", "--v6-prefix", 128, "--limit", 3)
    assert (key_of(bed), bed.status()["v6_prefix"]) == ("dst", 128)


def test_load_force_with_another_key_starts_afresh(bed):
    """The key is fixed at load: load --force with the same key keeps the
    windows; with another one the windows start afresh, keyed anew."""
    a = "198.19.196.1"
    bed.nft_counters({"443": f"ip saddr {a} udp dport 443", "22": f"ip saddr {a} udp dport 22"})
    bed.load("--limit", 3, "--window", "1h")
    bed.send(a, 5, dport=443)
    assert bed.counts()["443"] == 3 and counted(bed, a) == 5
    bed.send(a, 2, dport=22)
    assert bed.counts()["22"] == 0, "one budget for the source"

    out = bed.load("--force", "--key", "src,dport", "--limit", 3, "--window", "1h")
    assert "every window restarted (the source tables changed:" in out and "--key" in out, out
    assert key_of(bed) == "src,dport"
    assert counted(bed, a, 443) == 0 and counted(bed, a, 22) == 0
    bed.send(a, 5, dport=443)
    bed.send(a, 1, dport=22)
    got = bed.counts()
    assert (got["443"], got["22"]) == (6, 1), got
    # Again with the same key: the windows are kept.
    out = bed.load("--force", "--key", "src,dport", "--limit", 3, "--window", "1h")
    assert "restarted" not in out, out
    assert counted(bed, a, 443) == 5 and counted(bed, a, 22) == 1

    out = bed.load("--force", "--key", "src", "--limit", 3, "--window", "1h")
    assert "every window restarted" in out, out
    assert key_of(bed) == "src" and counted(bed, a) == 0
    bed.send(a, 2, dport=443)
    bed.send(a, 2, dport=22)
    got = bed.counts()
    assert (got["443"], got["22"]) == (8, 2), ("the ports share one budget again", got)


# ---- events ----------------------------------------------------------------------------

def events_one(bed, *args):
    """`xdp-rl events IFACE ARGS --count 1`, once it holds the lease."""
    p = subprocess.Popen(bed.argv("events", bed.rx_if, "--count", 1, *args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "reading (pid" in line, (line, p.poll())
    return p


def events_end(p):
    try:
        out, err = p.communicate(timeout=rlbed.CMD_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    assert p.returncode == 0 and "1 shown" in err, (p.returncode, out, err)
    return out.splitlines()


def test_events_name_the_port(bed):
    """The record of a key over its limit has its port: in --json a "port"
    field, in text "port N" after the key."""
    a, s6 = "198.19.197.1", "2001:2:0:197::5"
    bed.load("--key", "src,dport", "--limit", 2, "--window", "1h")
    bed.send(a, 2, dport=22)   # up to its limit: no record
    p = events_one(bed, "--json")
    try:
        bed.send(a, 3, dport=443)
    finally:
        lines = events_end(p)
    assert len(lines) == 1, lines
    e = json.loads(lines[0])
    assert (e["kind"], e["source"], e["port"], e["count"], e["limit"]) == \
        ("source", f"{a}/32", 443, 3, 2), e

    p = events_one(bed)
    t0 = time.monotonic()
    try:
        bed.send(s6, 3, dport=8443)
    finally:
        lines = events_end(p)
    assert time.monotonic() - t0 < rlbed.CMD_TIMEOUT
    assert len(lines) == 1 and "2001:2:0:197::/64 port 8443" in lines[0], lines



def table_bytes(bed):
    """The kernel's memlock of the limiter's pinned source tables: {name: bytes}."""
    ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    doc = json.loads(rlbed.run_ok([rlbed.BIN, "status", "--all", "--json"]).stdout)
    (folder,) = [l["folder"] for l in doc["limiters"] if l["netns"] == ino]
    out = {}
    for name in ("src4", "src6"):
        r = rlbed.run_ok(["bpftool", "-j", "map", "show", "pinned", f"{folder}/{name}"])
        out[name] = json.loads(r.stdout)["bytes_memlock"]
    return out


def test_a_port_costs_an_ipv4_key_what_an_ipv6_key_costs(bed):
    """README and tables.md: with a port, an IPv4 key is laid out as an IPv6
    one (on the bucket table 96 B/source, not 64), and IPv6 costs the same."""
    sizes = {}
    for key in ("src", "src,dport"):
        bed.load("--key", key, "--max-sources", 65536, "--force")
        sizes[key] = table_bytes(bed)
    assert sizes["src,dport"]["src6"] == sizes["src"]["src6"], sizes
    assert sizes["src,dport"]["src4"] == sizes["src,dport"]["src6"], sizes
    assert sizes["src"]["src4"] < sizes["src"]["src6"], sizes
    if bed.table == "buckets":
        # Two slots a source: 32 bytes a slot narrow, 48 wide (a 16-byte key after the
        # header); the kernel adds a page or so to each map.
        per = {k: round(v["src4"] / 65536) for k, v in sizes.items()}
        assert per == {"src": 64, "src,dport": 96}, sizes
