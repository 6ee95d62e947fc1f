#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Send crafted Ethernet frames out of one interface, for tests and the demo.

Run it inside the sender's network namespace (`ip netns exec NS ...`). Every
address must be in the benchmarking ranges 198.18.0.0/15 or 2001:2::/48; any
other address is refused. The loop is bounded by --count and --deadline.

Frames go round-robin over the sources, --count frames per source. A raw
socket that outruns the veth gets ENOBUFS: the frame was not sent, so it is
retried after a short pause (and counted), never silently lost.

Prints one JSON object: {"sent": N, "per_source": {src: n}, "retries": N,
"timed_out": bool}.
"""
import argparse
import ipaddress
import json
import socket
import struct
import sys
import time

ETH_P_IP, ETH_P_IPV6, ETH_P_ARP = 0x0800, 0x86DD, 0x0806
ETH_P_8021Q, ETH_P_8021AD = 0x8100, 0x88A8
BENCH_V4 = ipaddress.ip_network("198.18.0.0/15")
BENCH_V6 = ipaddress.ip_network("2001:2::/48")


LINK_LOCAL_V4 = ipaddress.ip_network("169.254.0.0/16")
LINK_LOCAL_V6 = ipaddress.ip_network("fe80::/10")


def allowed(addr, link_local=False):
    """In the benchmarking ranges; with @link_local, a link-local source too
    (it never leaves the veth the frames are sent on)."""
    a = ipaddress.ip_address(addr)
    if link_local and a in (LINK_LOCAL_V4 if a.version == 4 else LINK_LOCAL_V6):
        return True
    return a in (BENCH_V4 if a.version == 4 else BENCH_V6)


TCP_FLAGS = {"S": 0x02, "A": 0x10, "F": 0x01, "R": 0x04, "P": 0x08}


def transport(proto, src, dst, payload, dport, flags, pseudo):
    """The transport header and payload: UDP to @dport, TCP with @flags, or ICMP(v6) echo."""
    if proto == "tcp":
        f = sum(TCP_FLAGS[c] for c in flags)
        th = struct.pack("!HHIIBBHHH", 40000, dport, 1, 0, 5 << 4, f, 65535, 0, 0) + payload
        c = csum(pseudo(6, len(th)) + th)
        return 6, th[:16] + struct.pack("!H", c) + th[18:]
    if proto in ("icmp", "icmpv6"):
        t = 8 if proto == "icmp" else 128
        ih = struct.pack("!BBHHH", t, 0, 0, 1, 1) + payload
        c = csum((pseudo(58, len(ih)) if proto == "icmpv6" else b"") + ih)
        return (1 if proto == "icmp" else 58), ih[:2] + struct.pack("!H", c) + ih[4:]
    uh = struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload
    c = csum(pseudo(17, len(uh)) + uh) or 0xFFFF
    return 17, uh[:6] + struct.pack("!H", c) + uh[8:]


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def ipv4_header(s, d, num, length, frag, ident, ttl=64):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, ident, frag, ttl, num, 0, s, d)
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]


def ipv4_packets(src, dst, payload, proto="udp", dport=9, flags="", cut=0, ident=1):
    """One IPv4 datagram; with @cut, as two fragments, the first carrying
    @cut bytes (a multiple of 8) of the transport."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    num, l4 = transport(proto, src, dst, payload, dport, flags,
                        lambda p, n: s + d + struct.pack("!xBH", p, n))
    if not cut:
        return [ipv4_header(s, d, num, len(l4), 0x4000, ident) + l4]
    return [ipv4_header(s, d, num, cut, 0x2000, ident) + l4[:cut],
            ipv4_header(s, d, num, len(l4) - cut, cut // 8, ident) + l4[cut:]]


# IPv6 next headers: destination options, fragment.
DSTOPTS, FRAGMENT = 60, 44


def ipv6_packets(src, dst, payload, proto="udp", dport=9, flags="", cut=0, ident=1, ext=0):
    """One IPv6 datagram behind @ext destination options headers; with
    @cut, as two fragments (a Fragment header after them), the first
    carrying @cut bytes (a multiple of 8) of the transport."""
    s, d = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    num, l4 = transport(proto, src, dst, payload, dport, flags,
                        lambda p, n: s + d + struct.pack("!IxxxB", n, p))
    # Each options header: 8 bytes, a PadN of 4 bytes.
    chain, first = b"", num
    for i in range(ext):
        nxt = num if i == ext - 1 else DSTOPTS
        chain += struct.pack("!BBBB4x", nxt, 0, 1, 4)
    if ext:
        first = DSTOPTS

    def packet(nxt, body):
        return struct.pack("!IHBB", 6 << 28, len(body), nxt, 64) + s + d + body

    if not cut:
        return [packet(first, chain + l4)]
    # The fragmentable part is the transport; the options headers stay in each.
    if ext:
        chain = chain[:-8] + struct.pack("!BBBB4x", FRAGMENT, 0, 1, 4)
        head = first
    else:
        head = FRAGMENT
    fh = lambda off, more: struct.pack("!BxHI", num, off | more, ident)
    return [packet(head, chain + fh(0, 1) + l4[:cut]),
            packet(head, chain + fh(cut, 0) + l4[cut:])]


def frames(dst_mac, src_mac, src, dst, size, vlans, proto="udp", dport=9, flags="", cut=0,
           ident=1, ext=0):
    """The frames of one datagram (two if fragmented: @cut)."""
    v6 = ":" in src
    hlen = {"tcp": 20}.get(proto, 8) + (40 + 8 * ext if v6 else 20)
    payload = b"\0" * max(0, size - 14 - 4 * len(vlans) - hlen)
    return [l2(dst_mac, src_mac, v6, vlans, l3) for l3 in
            (ipv6_packets(src, dst, payload, proto, dport, flags, cut, ident, ext) if v6 else
             ipv4_packets(src, dst, payload, proto, dport, flags, cut, ident))]


def l2(dst_mac, src_mac, v6, vlans, l3):
    tags = b""
    # Outermost first: 802.1ad for the outer tag of a QinQ pair.
    for i, vid in enumerate(vlans):
        tpid = ETH_P_8021AD if (len(vlans) > 1 and i == 0) else ETH_P_8021Q
        tags += struct.pack("!HH", tpid, vid)
    etype = ETH_P_IPV6 if v6 else ETH_P_IP
    if not tags:
        return dst_mac + src_mac + struct.pack("!H", etype) + l3
    # The first TPID takes the EtherType's place; each tag ends with the next type.
    tpids = [struct.unpack("!H", tags[i:i + 2])[0] for i in range(0, len(tags), 4)]
    vids = [struct.unpack("!H", tags[i + 2:i + 4])[0] for i in range(0, len(tags), 4)]
    out = dst_mac + src_mac + struct.pack("!H", tpids[0])
    for i, vid in enumerate(vids):
        nxt = tpids[i + 1] if i + 1 < len(tpids) else etype
        out += struct.pack("!HH", vid, nxt)
    return out + l3


def sources(args):
    out = list(args.src or [])
    if args.src_range:
        base, n = args.src_range.split("+")
        b = ipaddress.ip_address(base)
        out += [str(b + i) for i in range(int(n))]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iface", required=True)
    p.add_argument("--dst-mac", required=True)
    p.add_argument("--dst", required=True, help="destination address")
    p.add_argument("--src", action="append", help="a source address (repeatable)")
    p.add_argument("--src-range", help="BASE+N: N consecutive sources from BASE")
    p.add_argument("--count", type=int, default=1, help="frames per source")
    p.add_argument("--size", type=int, default=64, help="frame length in bytes")
    p.add_argument("--vlan", type=int, action="append", default=[],
                   help="VLAN id, outermost first (repeat for QinQ)")
    p.add_argument("--deadline", type=float, default=30.0, help="seconds, at most")
    p.add_argument("--pps", type=float, default=0, help="pace to this rate (0: as fast as possible)")
    p.add_argument("--proto", choices=("udp", "tcp", "icmp", "icmpv6"), default="udp")
    p.add_argument("--dport", type=int, default=9, help="UDP/TCP destination port")
    p.add_argument("--tcp-flags", default="", help="TCP flags, e.g. S (SYN), SA, A")
    p.add_argument("--link-local", action="store_true",
                   help="allow link-local sources (fe80::/10, 169.254.0.0/16)")
    p.add_argument("--fragment", type=int, default=0, metavar="CUT",
                   help="send each datagram as two fragments, the first with CUT bytes "
                   "(a multiple of 8) of the transport; --count counts datagrams")
    p.add_argument("--ext", type=int, default=0,
                   help="IPv6: destination options headers before the transport")
    a = p.parse_args()

    srcs = sources(a)
    for addr in srcs:
        if not allowed(addr, a.link_local):
            sys.exit(f"sendpkts: {addr} is outside 198.18.0.0/15 and 2001:2::/48: refused")
    if not allowed(a.dst):
        sys.exit(f"sendpkts: {a.dst} is outside 198.18.0.0/15 and 2001:2::/48: refused")
    if not 0 < a.dport < 65536 or set(a.tcp_flags) - set(TCP_FLAGS):
        sys.exit("sendpkts: --dport or --tcp-flags is out of bounds")
    if not srcs:
        sys.exit("sendpkts: no source: give --src or --src-range")
    if a.count < 0 or a.count > 10_000_000 or len(srcs) > 1_000_000:
        sys.exit("sendpkts: --count or the number of sources is out of bounds")
    if a.fragment < 0 or a.fragment % 8 or a.fragment > 1000 or not 0 <= a.ext <= 64:
        sys.exit("sendpkts: --fragment (a multiple of 8) or --ext is out of bounds")

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((a.iface, 0))
    src_mac = sock.getsockname()[4]
    dst_mac = mac_bytes(a.dst_mac)
    # A fragmented datagram needs an identification of its own each time.
    fragmented = bool(a.fragment)

    def datagram(s, n):
        return frames(dst_mac, src_mac, s, a.dst, a.size, a.vlan, a.proto, a.dport,
                      a.tcp_flags, a.fragment, 1 + n % 60000, a.ext)

    built = [datagram(s, 0) for s in srcs]

    sent, retries, timed_out = 0, 0, False
    per = [0] * len(srcs)
    end = time.monotonic() + a.deadline
    gap = 1.0 / a.pps if a.pps else 0
    nxt = time.monotonic()
    for n in range(a.count):
        for i, fs in enumerate(built):
            if fragmented:
                fs = datagram(srcs[i], n)
            for f in fs:
                while True:
                    try:
                        sock.send(f)
                        break
                    except OSError as e:
                        if e.errno != 105:  # ENOBUFS: not sent; let the veth drain
                            raise
                        retries += 1
                        if time.monotonic() > end:
                            timed_out = True
                            break
                        time.sleep(0.0005)
                if timed_out:
                    break
            if timed_out:
                break
            sent += 1
            per[i] += 1
            if gap:
                nxt += gap
                delay = nxt - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            if time.monotonic() > end:
                timed_out = True
                break
        if timed_out:
            break
    print(json.dumps({"sent": sent, "retries": retries, "timed_out": timed_out,
                      "per_source": dict(zip(srcs, per))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
