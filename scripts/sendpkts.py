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


def allowed(addr):
    a = ipaddress.ip_address(addr)
    return a in (BENCH_V4 if a.version == 4 else BENCH_V6)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def ipv4_packet(src, dst, payload, ttl=64):
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, ttl,
                      17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + udp


def ipv6_packet(src, dst, payload):
    s, d = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    length = 8 + len(payload)
    pseudo = s + d + struct.pack("!IxxxB", length, 17)
    udp = struct.pack("!HHHH", 40000, 9, length, 0) + payload
    c = csum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    return struct.pack("!IHBB", 6 << 28, length, 17, 64) + s + d + udp


def frame(dst_mac, src_mac, src, dst, size, vlans):
    v6 = ":" in src
    payload = b"\0" * max(0, size - 14 - 4 * len(vlans) - (48 if v6 else 28))
    l3 = ipv6_packet(src, dst, payload) if v6 else ipv4_packet(src, dst, payload)
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
    a = p.parse_args()

    srcs = sources(a)
    for addr in srcs + [a.dst]:
        if not allowed(addr):
            sys.exit(f"sendpkts: {addr} is outside 198.18.0.0/15 and 2001:2::/48: refused")
    if not srcs:
        sys.exit("sendpkts: no source: give --src or --src-range")
    if a.count < 0 or a.count > 10_000_000 or len(srcs) > 1_000_000:
        sys.exit("sendpkts: --count or the number of sources is out of bounds")

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((a.iface, 0))
    src_mac = sock.getsockname()[4]
    dst_mac = mac_bytes(a.dst_mac)
    frames = [frame(dst_mac, src_mac, s, a.dst, a.size, a.vlan) for s in srcs]

    sent, retries, timed_out = 0, 0, False
    per = [0] * len(srcs)
    end = time.monotonic() + a.deadline
    gap = 1.0 / a.pps if a.pps else 0
    nxt = time.monotonic()
    for _ in range(a.count):
        for i, f in enumerate(frames):
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
