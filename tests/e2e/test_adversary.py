# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Frames shaped to slip past a selector, through namespaces, with the
receiving stack's own counters (/proc/net/snmp: Tcp InSegs, Udp
InDatagrams) as ground truth: whatever the stack delivers to a selected
service is limited. Each shape is first sent with the limiter in --dry-run,
which passes everything: the stack must deliver every datagram then, or the
case proves nothing. The program's view of the same shapes, byte by byte,
is tests/unit/test_corpus.c."""
import pytest

import rlbed

pytestmark = pytest.mark.both_tables

LIMIT = 5
SENT = 30


# What reached a transport, socket or not: TCP counts every segment in,
# UDP those it delivered and those no socket took.
REACHED = {
    "tcp": ("Tcp.InSegs",),
    "udp": ("Udp.InDatagrams", "Udp.NoPorts", "Udp6.InDatagrams", "Udp6.NoPorts"),
    "icmp": ("Icmp.InMsgs",),
}


def delivered(bed, proto, send):
    """How many datagrams @send() got to the stack's @proto."""
    def total():
        snmp = bed.snmp()
        return sum(snmp[k] for k in REACHED[proto])
    before = total()
    send()
    return total() - before


def limited_and_deliverable(bed, proto, send, load):
    """Under --dry-run every datagram of one source reaches the stack;
    enforced, another source's, LIMIT at most. send(i): source i's."""
    bed.load(*load, "--dry-run")
    dry = delivered(bed, proto, lambda: send(0))
    bed.xdp_ok("set", bed.rx_if, "--enforce")
    got = delivered(bed, proto, lambda: send(1))
    return dry, got


SYN_80 = ("--limit", LIMIT, "--window", "1h", "--proto", "tcp", "--dport", 80, "--syn")


@pytest.mark.parametrize("ext", [0, 7, 8, 9, 12])
def test_syn_behind_destination_options_is_limited(bed, ext):
    """Issue 21: at 7 options headers the parser gave up and the SYN passed as
    unselected; Linux walks any number. Past the parser's 8 the transport is
    not found, and no one limit is known to be the packet's: counted by any
    one (a rule's, a key's port 0), it would be a second budget beside its
    real port's. It is dropped as malformed (passed in dry run)."""
    def send(i):
        bed.send(f"2001:2:0:{0x2100 + 0x20 * i + ext:x}::1", SENT, proto="tcp", dport=80,
                 flags="S", ext=ext)

    dry, got = limited_and_deliverable(bed, "tcp", send, SYN_80)
    assert dry == SENT, f"{ext} headers: the stack took {dry} of {SENT} with no limit"
    st = bed.stats()
    if ext <= 8:
        assert got == LIMIT, f"{ext} headers: {got} SYNs reached TCP, limit {LIMIT}"
        assert st["malformed"] == 0, st
    else:
        assert got == 0, f"{ext} headers: {got} SYNs reached TCP, past the walk"
        assert st["malformed"] == 2 * SENT and st["drops_malformed"] == SENT, st
    assert st["unselected"] == 0


@pytest.mark.parametrize("cut", [8, 16])
def test_syn_in_two_fragments_is_limited(bed, cut):
    """Issue 21: a SYN whose first fragment ends before the TCP flags was
    selected by neither fragment; the stack reassembles it into a SYN. Now
    each fragment is counted (its flags unread): a fragmented SYN costs two."""
    def send(i):
        bed.send(f"198.19.21.{1 + i}", SENT, proto="tcp", dport=80, flags="S", fragment=cut)

    dry, got = limited_and_deliverable(bed, "tcp", send, SYN_80)
    assert dry == SENT, f"the stack reassembled {dry} of {SENT} SYNs with no limit"
    assert got <= LIMIT, f"{got} reassembled SYNs reached TCP, limit {LIMIT}"
    assert got >= LIMIT // 2, f"only {got}: each SYN should cost its two fragments"


def test_ipv6_syn_in_two_fragments_is_counted(bed):
    """The same shape over IPv6: Linux drops a first fragment that cuts the
    TCP header (RFC 7112), so it reaches nothing; xdp-rl counts each
    fragment all the same, under the SYN limit."""
    bed.load(*SYN_80)
    got = delivered(bed, "tcp", lambda: bed.send("2001:2:0:2200::1", SENT, proto="tcp",
                                                 dport=80, flags="S", fragment=8))
    st = bed.stats()
    assert got == 0
    assert (st["passed"], st["dropped"], st["unselected"]) == (LIMIT, 2 * SENT - LIMIT, 0), st


def test_udp_fragments_to_a_selected_port_are_limited(bed):
    """The later fragment of a datagram to a selected port carries no ports:
    counted all the same."""
    load = ("--limit", LIMIT, "--window", "1h", "--proto", "udp", "--dport", 53)

    def send(i):
        bed.send(f"198.19.21.{11 + i}", SENT, proto="udp", dport=53, size=200, fragment=16)

    dry, got = limited_and_deliverable(bed, "udp", send, load)
    assert dry == SENT
    assert got <= LIMIT


def test_nested_rule_selector_miss_falls_to_the_enclosing_rule(bed):
    """Issue 21: under 198.18.0.0/16 --deny, a /32 --allow --proto icmp let
    the /32's UDP through (to the global limits). It falls to the /16."""
    bed.load("--limit", 1000, "--window", "1h")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.0.0/16", "--deny")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.7.7/32", "--allow", "--proto", "icmp")
    udp = delivered(bed, "udp", lambda: bed.send("198.19.7.7", SENT, dport=9))
    assert udp == 0, f"{udp} UDP datagrams from the /32 passed the /16's deny"
    icmp = delivered(bed, "icmp", lambda: bed.send("198.19.7.7", 3, proto="icmp"))
    assert icmp == 3, "the /32 allows its ICMP"
    assert bed.stats()["denied"] == SENT
    # Without the /16, the same UDP reaches the stack: the test can tell.
    bed.xdp_ok("rule", "del", bed.rx_if, "198.19.0.0/16")
    udp = delivered(bed, "udp", lambda: bed.send("198.19.7.7", 3, dport=9))
    assert udp == 3, f"with the /16 gone, {udp} of 3 reached UDP"


def test_rules_nested_past_the_walk_are_refused(bed):
    """Four rules with selectors, each inside the next: the datapath walks at
    most three past a miss, so rule add refuses the fourth and changes
    nothing."""
    bed.load("--limit", 1000, "--window", "1h")
    for cidr in ("198.19.0.0/16", "198.19.8.0/21", "198.19.9.0/24"):
        bed.xdp_ok("rule", "add", bed.rx_if, cidr, "--allow", "--syn")
    before = bed.xdp_ok("rule", "list", bed.rx_if)
    r = bed.xdp("rule", "add", bed.rx_if, "198.19.9.9/32", "--allow", "--syn")
    assert r.returncode == 1, r
    assert "4 rules with selectors nest in one another" in r.stderr, r.stderr
    assert "198.19.0.0/16, 198.19.8.0/21, 198.19.9.0/24, 198.19.9.9/32" in r.stderr
    assert bed.xdp_ok("rule", "list", bed.rx_if) == before
    # A rule without a selector between breaks the chain.
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.9.8/31", "--deny")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.9.9/32", "--allow", "--syn")


def test_three_vlan_tags_are_dropped_as_malformed(bed):
    """Past the parser's two tags a frame cannot be read to its IP header:
    it fails closed (malformed, dropped) rather than pass as not IP."""
    bed.load("--limit", 5, "--window", "30s")
    bed.send("198.19.21.3", 20, vlans=[10, 20, 30])
    st = bed.stats()
    assert (st["malformed"], st["not_ip"], st["passed"]) == (20, 0, 0), st
