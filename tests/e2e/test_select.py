# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What gets limited, tried as an operator would: selectors with real TCP
clients and servers in the namespaces, link-local neighbours, the kernel's
own reasons when an attach fails, and limits that cannot work.

Servers and clients are python3 one-liners in the test's namespaces, bounded
by timeouts; every address is the testbed's (198.18.0.1 sends, 198.18.0.2
runs the limiter) or in 198.19.0.0/16, 2001:2::/48, or link-local on the
testbed's own veth.
"""
import json
import os
import subprocess
import tempfile
import time

import pytest

from rlbed import run, run_ok

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16); s.settimeout(30)
print("ready", flush=True)
for _ in range(int(sys.argv[4])):
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(10)
    try:
        c.sendall(b"x" * int(sys.argv[3]))
    except OSError:
        pass
    c.close()
"""

CLIENT = """
import json, socket, sys, time
got, t0 = 0, time.monotonic()
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += len(b)
    ok = True
except OSError as e:
    ok = False
print(json.dumps({"ok": ok, "bytes": got, "seconds": time.monotonic() - t0}))
"""


def ns_py(ns, script, *args, timeout=30):
    return run(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", script, *map(str, args)],
               timeout=timeout)


class Server:
    """A TCP server in @ns on @addr:@port that sends @size bytes to each of @conns clients."""

    def __init__(self, ns, addr, port, size, conns):
        self.p = subprocess.Popen(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", SERVER,
                                   addr, str(port), str(size), str(conns)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        assert line.strip() == "ready", (line, self.p.stderr.read())

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=10)


def fetch(ns, addr, port, timeout):
    r = ns_py(ns, CLIENT, addr, port, timeout, timeout=timeout + 30)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


# ---- a selector for one port ----------------------------------------------------

@pytest.mark.both_tables
@pytest.mark.kernels
def test_a_port_selector_limits_its_port_and_passes_the_rest(bed):
    """--dport 8080: traffic to the service is limited; the server's own
    downloads (replies to connections it opened) pass untouched. Without the
    selector, the same download stalls under the limit."""
    size = 2_000_000
    bed.nft_counters({"to8080": "tcp dport 8080"})
    bed.load("--limit", 5, "--window", "1h")
    srv = Server(bed.tx, "198.18.0.1", 9000, size, 4)
    try:
        stalled = fetch(bed.rx, "198.18.0.1", 9000, 3)
        assert stalled["bytes"] < size, ("without a selector the reply is limited", stalled)
        bed.load("--force", "--limit", 5, "--window", "1h", "--proto", "tcp", "--dport", 8080)
        st0 = bed.stats()
        got = fetch(bed.rx, "198.18.0.1", 9000, 15)
        assert got["ok"] and got["bytes"] == size, got
        st = bed.stats()
        assert st["unselected"] - st0["unselected"] > 1000, st
        assert st["passed"] == st0["passed"] and st["dropped"] == st0["dropped"], st
    finally:
        srv.stop()
    bed.send("198.19.60.1", 10, proto="tcp", dport=8080, flags="A")
    bed.send("198.19.60.1", 10, proto="tcp", dport=8081, flags="A")
    assert bed.counts()["to8080"] == 5
    st = bed.status()
    assert st["select"] == {"proto": "tcp", "dports": ["8080"], "syn": False}, st
    g = bed.get("198.19.60.1")
    assert g["count"] == 10 and g["limit"] == 5, g


def test_syn_limits_count_connection_attempts(bed):
    """--syn --limit 3: three connections get through, their data flows
    untouched; the fourth and fifth attempts' SYNs are dropped (and their
    retransmits, each a new attempt), so they time out."""
    bed.load("--syn", "--limit", 3, "--window", "1h")
    srv = Server(bed.rx, "198.18.0.2", 8081, 200_000, 5)
    try:
        res = [fetch(bed.tx, "198.18.0.2", 8081, 2.5) for _ in range(5)]
    finally:
        srv.stop()
    assert [r["ok"] and r["bytes"] == 200_000 for r in res] == [True, True, True, False, False], res
    st = bed.stats()
    assert st["passed"] == 3 and st["dropped"] >= 2, st
    assert st["unselected"] > 6, st   # the clients' ACKs of the data
    g = bed.get("198.18.0.1")
    assert g["limit"] == 3 and g["count"] >= 5, g

    # Crafted: SYNs count, SYN+ACKs (replies to the server's own connects) do not.
    bed.nft_counters({"syn": "ip saddr 198.19.61.1 tcp flags & (syn|ack) == syn",
                      "synack": "ip saddr 198.19.61.1 tcp flags & (syn|ack) == syn|ack"})
    bed.send("198.19.61.1", 6, proto="tcp", dport=443, flags="S")
    bed.send("198.19.61.1", 6, proto="tcp", dport=443, flags="SA")
    got = bed.counts()
    assert (got["syn"], got["synack"]) == (3, 6), got


def test_rule_with_a_selector_beside_the_global_limit(bed):
    """20 SYN/1s and 2 000 packets/1s to port 443 for the same source, here
    2 SYNs and 4 packets to 443 an hour: a SYN is charged to the rule, the
    other packets to 443 to the global limit, the rest pass untouched."""
    src = "198.19.62.1"
    bed.nft_counters({"syn": f"ip saddr {src} tcp flags & (syn|ack) == syn",
                      "ack443": f"ip saddr {src} tcp dport 443 tcp flags & (syn|ack) == ack",
                      "ack22": f"ip saddr {src} tcp dport 22"})
    bed.load("--limit", 4, "--window", "1h", "--proto", "tcp", "--dport", 443)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.0.0/16", "--syn", "--layer", "2/1h")
    bed.send(src, 5, proto="tcp", dport=443, flags="S")
    bed.send(src, 6, proto="tcp", dport=443, flags="A")
    bed.send(src, 6, proto="tcp", dport=22, flags="A")
    got = bed.counts()
    assert (got["syn"], got["ack443"], got["ack22"]) == (2, 4, 6), got
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert rules[0]["select"] == {"proto": "any", "dports": [], "syn": True}, rules
    assert "198.19.0.0/16 --layer 2/1h --syn " in bed.xdp_ok("rule", "list", bed.rx_if)


def test_selector_changes_live_and_bad_selectors_are_refused(bed):
    bed.load("--limit", 2, "--window", "1h", "--dport", 53)
    for argv, word in ((["--proto", "udp", "--syn"], "--syn is TCP's"),
                       (["--proto", "icmp", "--dport", "80"], "--dport goes with"),
                       (["--dport", "80-70"], "backwards"),
                       (["--dport", "0"], "at least 1"),
                       (["--dport", "1,2,3,4,5,6,7,8,9"], "more than 8"),
                       (["--proto", "sctp"], "use tcp, udp, icmp, icmpv6 or any"),
                       (["--syn", "--no-syn"], "exclude each other"),
                       (["--link-local", "maybe"], "per-address, prefix or exempt")):
        r = bed.xdp("set", bed.rx_if, *argv)
        assert r.returncode == 2 and word in r.stderr, (argv, r)
    assert bed.status()["select"]["dports"] == ["53"]
    bed.nft_counters({"53": "udp dport 53", "54": "udp dport 54"})
    bed.send("198.19.63.1", 4, dport=53)
    bed.send("198.19.63.1", 4, dport=54)
    assert (bed.counts()["53"], bed.counts()["54"]) == (2, 4)
    bed.xdp_ok("set", bed.rx_if, "--dport", "any")
    assert bed.status()["select"] is None
    bed.send("198.19.63.2", 4, dport=54)
    assert bed.counts()["54"] == 6


@pytest.mark.both_tables
def test_a_new_selector_restarts_windows_and_set_says_who_is_blocked(bed):
    """A --syn flood's count is of SYNs: under a selector of every packet it
    would block the source's other traffic for the rest of the window. A new
    selector restarts the windows of the limits it selects for, and says so;
    a lower limit keeps them, and set says how many it leaves blocked."""
    src = "198.19.66.1"
    bed.nft_counters({"src": f"ip saddr {src}"})
    bed.load("--limit", 5, "--window", "1h", "--syn")
    bed.send(src, 20, proto="tcp", dport=80, flags="S")
    assert bed.counts()["src"] == 5 and bed.get(src)["count"] == 20
    out = bed.xdp_ok("set", bed.rx_if, "--no-syn", "--limit", 10)
    assert (f"xdp-rl: {bed.rx_if}: every window of these limits restarted (the selector "
            "changed which packets count)") in out, out
    assert "no budget left" not in out, out
    assert bed.get(src)["count"] == 0, "the SYN flood's window does not carry over"
    bed.send(src, 12)
    assert bed.counts()["src"] == 5 + 10, "a fresh budget of 10, every packet counted"

    # A lower limit under a count already past it: kept, and said.
    other = "198.19.66.2"
    bed.send(other, 3)
    out = bed.xdp_ok("set", bed.rx_if, "--limit", 3)
    assert "restarted" not in out, out
    assert (f"xdp-rl: {bed.rx_if}: 2 windows have no budget left under these limits: their "
            "keys are blocked until they end (within 1h;") in out, out
    assert bed.get(src)["count"] == 12
    # A rule's selector changed by apply: its windows restart too ("replaced").
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.67.0/24", "--layer", "2/1h", "--syn")
    text = bed.xdp_ok("config", bed.rx_if).replace(
        "rule 198.19.67.0/24 --layer 2/1h --syn", "rule 198.19.67.0/24 --layer 2/1h")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.conf")
        with open(path, "w") as f:
            f.write(text)
        out = bed.xdp_ok("apply", path)
    assert "replaced rule 198.19.67.0/24 --layer 2/1h (was --layer 2/1h --syn): its sources " \
        "start afresh" in out, out


# ---- link-local neighbours ---------------------------------------------------------

def test_link_local_neighbours_each_keep_their_own_budget(bed):
    """With the default --v6-prefix 64 every fe80:: neighbour would fall into
    fe80::/64 and share one window: one neighbour's flood would starve
    neighbour discovery from the others (a router's RAs and NAs among them).
    By default each link-local source is keyed by its own address."""
    bed.nft_counters({"n1": "ip6 saddr fe80::1", "n2": "ip6 saddr fe80::2",
                      "n3": "ip6 saddr fe80::3",
                      "v1": "ip saddr 169.254.9.1", "v2": "ip saddr 169.254.9.2",
                      "g": "ip6 saddr 2001:2:0:64::/64"})
    bed.load("--limit", 3, "--window", "1h", "--v4-prefix", 16)
    assert bed.status()["link_local"] == "per-address"
    bed.send("fe80::1", 20, dst="2001:2::2", proto="icmpv6", link_local=True)
    bed.send("fe80::2", 3, dst="2001:2::2", proto="icmpv6", link_local=True)
    bed.send("169.254.9.1", 20, dst="198.18.0.2", link_local=True)
    bed.send("169.254.9.2", 3, dst="198.18.0.2", link_local=True)
    bed.send(["2001:2:0:64::1", "2001:2:0:64::2"], 3)
    got = bed.counts()
    assert (got["n1"], got["n2"], got["v1"], got["v2"]) == (3, 3, 3, 3), got
    assert got["g"] == 3, "global sources still share their /64"
    # get, reset and charge name the key the datapath charges: the whole address.
    g = bed.get("fe80::1")
    assert (g["key"], g["count"]) == ("fe80::1/128", 20), g
    assert bed.get("169.254.9.2")["key"] == "169.254.9.2/32"
    bed.xdp_ok("reset", bed.rx_if, "fe80::1")
    assert bed.get("fe80::1")["count"] == 0 and bed.get("fe80::2")["count"] == 3
    bed.send("fe80::1", 5, dst="2001:2::2", proto="icmpv6", link_local=True)
    assert bed.counts()["n1"] == 6, "fe80::1 starts afresh, alone"

    bed.xdp_ok("set", bed.rx_if, "--link-local", "exempt")
    st0 = bed.stats()
    bed.send("fe80::1", 10, dst="2001:2::2", proto="icmpv6", link_local=True)
    assert bed.counts()["n1"] == 16 and bed.stats()["unselected"] - st0["unselected"] == 10
    assert "exempt" in bed.xdp_ok("get", bed.rx_if, "fe80::1")
    assert bed.get("fe80::1")["link_local"] == "exempt"
    r = bed.xdp("charge", bed.rx_if, "fe80::1", "5")
    assert r.returncode != 0 and "exempt" in r.stderr, r

    bed.xdp_ok("set", bed.rx_if, "--link-local", "prefix")
    bed.send("fe80::2", 3, dst="2001:2::2", proto="icmpv6", link_local=True)
    bed.send("fe80::3", 3, dst="2001:2::2", proto="icmpv6", link_local=True)
    got = bed.counts()
    assert (got["n2"] - 3) + got["n3"] == 3, ("fe80::2 and ::3 share fe80::/64 now", got)
    assert bed.get("fe80::3")["key"] == "fe80::/64"


# ---- errors that say why ------------------------------------------------------------

def test_attach_failures_give_the_kernels_reason(bed):
    big, peer = f"{bed.tag}-j", f"{bed.tag}-k"
    run_ok(["ip", "-n", bed.rx, "link", "add", big, "mtu", "9000", "type", "veth",
            "peer", "name", peer, "mtu", "9000"])
    run_ok(["ip", "-n", bed.rx, "link", "set", big, "up"])
    run_ok(["ip", "-n", bed.rx, "link", "set", peer, "up"])
    r = bed.xdp("load", big)
    assert r.returncode == 1 and "the kernel says" in r.stderr and "MTU" in r.stderr, r
    assert "--mode generic" in r.stderr, r
    assert run_ok(["ip", "-n", bed.rx, "-j", "link", "show", big]).stdout.find("xdp") < 0

    br = f"{bed.tag}-br"
    run_ok(["ip", "-n", bed.rx, "link", "set", big, "mtu", "1500"])
    run_ok(["ip", "-n", bed.rx, "link", "set", peer, "mtu", "1500"])
    run_ok(["ip", "-n", bed.rx, "link", "add", br, "type", "bridge"])
    run_ok(["ip", "-n", bed.rx, "link", "set", big, "master", br])
    run_ok(["ip", "-n", bed.rx, "link", "set", br, "up"])
    bed.xdp_ok("load", br, "--mode", "generic")
    try:
        r = bed.xdp("load", big, "--mode", "generic")
        assert r.returncode == 1 and "upper device" in r.stderr, r
        assert "bridge" in r.stderr, r
        # The probe took nothing it attached along the way.
        link = json.loads(run_ok(["ip", "-n", bed.rx, "-j", "link", "show", big]).stdout)[0]
        assert "xdp" not in link, link
    finally:
        bed.xdp("unload", br)


def test_limits_that_cannot_work(bed):
    r = bed.xdp("load", bed.rx_if, "--bytes", "--limit", 40)
    assert r.returncode == 2 and "can never pass a frame" in r.stderr, r
    r = bed.xdp("load", bed.rx_if, "--bytes", "--limit", 1000, "--window", "1d")
    assert r.returncode == 0 and "frames of more than 1000 bytes can never pass" in r.stderr, r
    assert bed.status()["window"] == "1d"
    r = bed.xdp("set", bed.rx_if, "--limit", 10)
    assert r.returncode == 2 and "can never pass a frame" in r.stderr, r
    assert bed.status()["limit"] == 1000
