# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Rates (--rate N/DUR --burst B, the GCRA of bpf/rate.h) on real frames,
against the kernel's own token bucket, nftables' `limit`.

What nftables' limit promises (net/netfilter/nft_limit.c, the packet type,
as in v5.10 and since): `limit rate [over] N/second burst B packets` makes

    cost       = div64_u64(nsecs, rate)          (nft_limit_pkts_init: 1 s / N)
    tokens_max = div64_u64(nsecs, rate) * burst  (nft_limit_init, `if (pkts)`)
    tokens     = tokens_max, last = now          (at init; a set element's
                                                  clone starts full too)

and for each packet (nft_limit_eval), tokens = min(tokens + now - last,
tokens_max), last = now, and the packet is within the limit iff tokens -
cost >= 0, which then takes cost away; a packet over it takes nothing.
Time is ktime_get_ns(), CLOCK_MONOTONIC, the datapath's clock too. So
`burst 5` is 5 packets at once, not 6 (tokens_max is burst costs exactly:
the (rate + burst) / rate form is the byte type's), and the bucket starts
full. `over` (NFT_LIMIT_F_INV) only inverts the match: the rule matches,
and drops, the packets over the limit.

xdp-rl's rate passes a packet read at now iff max(TAT, now) + cost - now <=
tau, cost = ceil(DUR / N), tau = B * cost (packets); a refusal moves
nothing. That is a bucket of tau ns that starts full (a new key's TAT is
now), filled one ns per ns, each packet taking its cost: nft's. So

    xdp-rl --rate N/1s --burst B  ==  nft limit rate over N/second burst B packets

verdict for verdict when 1 s / N is a whole number of ns (both costs are
then DUR / N exactly, and tau = tokens_max = B costs): B frames at once,
then one more per DUR / N. The comparison runs both on the same frames: one
sender puts each frame on two namespace pairs at once, xdp-rl on the first
receiver, nft's limit in the second receiver's ingress chain (no XDP
program there), and a UDP socket in each receiver says which frames came
through. Both must give exactly the verdicts of the model below, frame by
frame, computed from the times the frames were actually sent; the schedule
keeps every verdict at least 25 ms from its boundary, and a run whose send
times came within MARGIN_NS of one (a stalled VM) is made again, so the
equality is deterministic.

Floods: the guarantee, in any interval of length t at most B + N * t / DUR
units pass, is checked over an interval that holds every pass (from the first
frame's send to the receiver's timestamp of the last pass), and that the
limiter does not starve the source: it passes at least B - 1 + N * t' /
DUR units, t' from the first frame to the last refused one (a refused
frame found TAT > now + tau - cost, which bounds the TAT from below),
measured inside the XDP clock's readings (check_bound says how). Both
with half a millisecond of clock slew allowed. Packets and --bytes with mixed
frame sizes, IPv4 and IPv6, per-source rule rates and a --shared rule's
one budget, on both tables.

Addresses: 198.18.0.0/15 and 2001:2::/48 only (scripts/sendpkts.py refuses
any other); namespaces from rlbed.Bed, removed even when a test fails; the
sender and receiver helpers are bounded in frames and in time.
"""
import ctypes
import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

import pytest

import rlbed
from rlbed import run_ok

pytestmark = pytest.mark.both_tables

HERE = os.path.dirname(os.path.abspath(__file__))
SEC = 1_000_000_000
# A run whose actual send times bring a verdict within this of its
# boundary is not deterministic: it is made again (the schedules below
# keep 25 ms and more).
MARGIN_NS = 5_000_000
RUN_ATTEMPTS = 3
MAX_FRAMES = 20_000          # per helper run
HELPER_DEADLINE = 20         # seconds, any helper run
# The bounds on a flood's interval are read from two processes' readings of
# CLOCK_REALTIME (send times, receive timestamps), which NTP may slew between
# them: they allow this much either way.
CLOCK_SLACK_NS = 500_000


# ---- the model: nft's token bucket, which is xdp-rl's GCRA ----------------

def rate_cost(n, dur_ns, inc):
    """ns a charge of @inc units costs: xdp_rl_rate_cost, with per_fp as
    xdp_rl_rate_fill rounds it (40.24 fixed point, up)."""
    frac = 24
    per_fp = ((dur_ns << frac) + n - 1) // n
    mask = (1 << frac) - 1
    return inc * (per_fp >> frac) + ((inc * (per_fp & mask) + mask) >> frac)


def model(times_ns, units, keys, n, dur_ns, burst, groups=None):
    """The verdicts (True: passed) of a rate of @n per @dur_ns, burst
    @burst, for frames of @units arriving at @times_ns, each charged to
    its key in @keys; and the smallest distance, in ns, of any verdict to
    its boundary: how much later a refused frame, or earlier a passed one,
    would have had to come to turn it. @groups: the frames sent at once
    (a group id each, e.g. the planned time): a frame that passes as its
    key's first frame in the group would have stays passed, as the frames
    of a group go out in order. Packets: tau is @burst packets' cost
    (xdp_rl_rate_tau)."""
    tau = burst * rate_cost(n, dur_ns, 1)
    groups = groups or list(range(len(times_ns)))
    began = {}
    for t, k, g in zip(times_ns, keys, groups):
        began.setdefault((g, k), t)
    tat, out, margin = {}, [], float("inf")
    for t, u, k, g in zip(times_ns, units, keys, groups):
        c = rate_cost(n, dur_ns, u)
        prev = tat.get(k)
        # It passes iff max(TAT, t) + c - t <= tau: iff it came at or after
        # due = TAT + c - tau (always, for a key that owes nothing).
        due = None if prev is None else prev + c - tau
        ok = due is None or t >= due
        if due is not None and not (ok and due <= began[g, k]):
            margin = min(margin, abs(t - due))
        if ok:
            tat[k] = max(t if prev is None else prev, t) + c
        out.append(ok)
    return out, margin


# ---- the helpers: a sender and a receiver, each a process of its own -------

def enter_netns(name):
    """Move the calling process into namespace @name (setns; Python 3.11 has no os.setns)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            e = ctypes.get_errno()
            raise OSError(e, f"setns {name}: {os.strerror(e)}")
    finally:
        os.close(fd)


def helper_send(req):
    """Send each frame of @req at its time on every link, back to back;
    return when each went out (CLOCK_REALTIME ns, before its first send)."""
    sys.path.insert(0, os.path.join(rlbed.ROOT, "scripts"))
    import sendpkts
    frames = req["frames"]
    assert len(frames) <= MAX_FRAMES and all(len(f) == 5 for f in frames)
    links = []
    for ns, iface, dst_mac in req["links"]:
        enter_netns(ns)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        links.append((s, s.getsockname()[4], sendpkts.mac_bytes(dst_mac)))
    built = []
    for t, src, dst, size, seq in frames:
        for a in (src, dst):
            if not sendpkts.allowed(a):
                sys.exit(f"{a} is outside 198.18.0.0/15 and 2001:2::/48: refused")
        v6 = ":" in src
        hlen = 14 + (40 if v6 else 20) + 8
        payload = struct.pack("!I", seq) + b"\0" * max(0, size - hlen - 4)
        l3 = (sendpkts.ipv6_packets if v6 else sendpkts.ipv4_packets)(src, dst, payload)[0]
        built.append([sendpkts.l2(dm, sm, v6, (), l3) for _, sm, dm in links])
    deadline = time.monotonic() + HELPER_DEADLINE
    start = time.monotonic_ns() + 50_000_000
    sent_at = []
    for (t, *_), fs in zip(frames, built):
        due = start + int(t)
        while True:
            left = due - time.monotonic_ns()
            if left <= 0:
                break
            if left > 2_000_000:
                time.sleep((left - 1_000_000) / SEC)
        if time.monotonic() > deadline:
            break
        sent_at.append(time.time_ns())
        for (s, _, _), f in zip(links, fs):
            while True:
                try:
                    s.send(f)
                    break
                except OSError as e:
                    if e.errno != 105 or time.monotonic() > deadline:  # ENOBUFS: retry
                        raise
                    time.sleep(0.0002)
    return {"sent_at": sent_at}


def helper_receive(req):
    """A UDP socket on port 9 in each namespace of @req; prints "ready", then
    what arrives ([socket, seq, source, CLOCK_REALTIME ns]) once stdin closes."""
    socks = []
    so_timestampns = getattr(socket, "SO_TIMESTAMPNS", 35)
    for ns in req["netns"]:
        enter_netns(ns)
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        s.setsockopt(socket.SOL_SOCKET, so_timestampns, 1)
        s.bind(("::", 9))
        s.setblocking(False)
        socks.append(s)
    print("ready", flush=True)
    got, deadline, open_ = [], time.monotonic() + HELPER_DEADLINE, True
    while open_ and time.monotonic() < deadline and len(got) < MAX_FRAMES:
        r, _, _ = select.select(socks + [sys.stdin], [], [], 0.2)
        for s in r:
            if s is sys.stdin:
                open_ = bool(sys.stdin.readline())
                continue
            while True:
                try:
                    data, anc, _, addr = s.recvmsg(2048, 64)
                except BlockingIOError:
                    break
                ts = 0
                for lvl, typ, d in anc:
                    if lvl == socket.SOL_SOCKET and typ == so_timestampns:
                        sec, nsec = struct.unpack("qq", d[:16])
                        ts = sec * SEC + nsec
                src = addr[0][7:] if addr[0].startswith("::ffff:") else addr[0]
                got.append([socks.index(s), struct.unpack("!I", data[:4])[0], src, ts])
    return {"got": got}


class Receivers:
    """The receiver helper on @beds' namespaces, for a with block."""

    def __init__(self, beds):
        self.beds = beds

    def __enter__(self):
        self.p = subprocess.Popen([rlbed.PY, os.path.abspath(__file__), "receive"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.p.stdin.write(json.dumps({"netns": [b.rx for b in self.beds]}) + "\n")
        self.p.stdin.flush()
        ready, _, _ = select.select([self.p.stdout], [], [], 10)
        line = self.p.stdout.readline() if ready else ""
        assert line.strip() == "ready", f"receiver helper: {line!r} {self.p.stderr.read()}"
        return self

    def stop(self):
        """[socket, seq, source, ns] of every datagram received."""
        time.sleep(0.3)  # the last frames' NAPI polls and socket queues
        out, err = self.p.communicate("", timeout=HELPER_DEADLINE + 10)
        assert self.p.returncode == 0, f"receiver helper exited {self.p.returncode}: {err}"
        return json.loads(out.splitlines()[-1])["got"]

    def __exit__(self, *exc):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def send(beds, frames):
    """Send @frames ([t_ns, src, dst, size, seq]) on each bed's pair at once;
    return each frame's send time (CLOCK_REALTIME ns)."""
    req = {"links": [[b.tx, b.tx_if, b.rx_mac] for b in beds], "frames": frames}
    r = subprocess.run([rlbed.PY, os.path.abspath(__file__), "send"], input=json.dumps(req),
                       capture_output=True, text=True, timeout=HELPER_DEADLINE + 10)
    assert r.returncode == 0, f"sender helper exited {r.returncode}: {r.stderr}"
    sent = json.loads(r.stdout)["sent_at"]
    assert len(sent) == len(frames), f"the sender ran out of time: {len(sent)} of {len(frames)}"
    return sent


def passed_seqs(got, sock=0):
    return {seq for s, seq, _, _ in got if s == sock}


def v6(addr):
    return ":" in addr


def dst_of(src):
    return "2001:2::2" if v6(src) else "198.18.0.2"


def saddr(src):
    return f"{'ip6' if v6(src) else 'ip'} saddr {src}"


# ---- fixtures ----------------------------------------------------------------

@pytest.fixture
def bed2(privileged, table, request):
    """A second namespace pair, for nft's limit beside xdp-rl's."""
    b = rlbed.Bed(table)
    request.addfinalizer(b.down)
    return b.start()


def nft_limit(bed, src, n, burst, unit="packets"):
    """nft's limit in @bed's receiver: the frames of @src over N/second,
    burst @burst, dropped (counter "over"); those within counted ("within")."""
    text = (f"table netdev ratecmp {{\n\tchain in {{\n"
            f'\t\ttype filter hook ingress device "{bed.rx_if}" priority 0\n'
            f'\t\t{saddr(src)} limit rate over {n}/second burst {burst} {unit} '
            f'counter drop comment "over"\n'
            f'\t\t{saddr(src)} counter comment "within"\n'
            '\t\tcounter comment "all"\n\t}\n}\n')
    r = subprocess.run(["ip", "netns", "exec", bed.rx, "nft", "-f", "-"], input=text,
                       capture_output=True, text=True, timeout=rlbed.CMD_TIMEOUT)
    assert r.returncode == 0, f"nft -f failed: {r.stderr}\n{text}"
    bed.nft_table = "ratecmp"


def link_rx_packets(bed):
    """The receiving veth's own count of frames received (`ip -s link`)."""
    out = run_ok(["ip", "-n", bed.rx, "-s", "-j", "link", "show", bed.rx_if]).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


# ---- xdp-rl against nft's limit, frame by frame -----------------------------

# N per second and burst B; 1 s / N = 100 ms, a whole number of ns.
CMP_N, CMP_B = 10, 4
CMP_SRC = "198.19.60.1"


def cmp_schedule():
    """[(ms, frames at once)]: a burst over B; a train at twice the rate,
    starting a quarter cost after the burst so that every frame is 25 ms
    from its boundary (pass, refuse, ...); a train slower than the rate;
    a pause that fills the bucket; a burst again. Model: 4+4+4+4 pass."""
    return ([(0, 7)] + [(75 + 50 * i, 1) for i in range(8)]
            + [(575 + 150 * i, 1) for i in range(4)] + [(1700, 7)])


def frames_of(schedule, src, size=64, seq0=0):
    out = []
    for ms, k in schedule:
        for _ in range(k):
            out.append([ms * 1_000_000, src, dst_of(src), size, seq0 + len(out)])
    return out


def test_same_verdicts_as_nft_limit(bed, bed2):
    """xdp-rl --rate 10/1s --burst 4 and nft `limit rate over 10/second burst
    4 packets` on the same frames: the same verdict for each, the model's."""
    frames = frames_of(cmp_schedule(), CMP_SRC)
    groups = [f[0] for f in frames]
    planned, margin = model(groups, [1] * len(frames), [0] * len(frames), CMP_N, SEC, CMP_B,
                            groups)
    # The schedule itself: deterministic by 25 ms, and it tests each part.
    assert margin >= 25_000_000 and sum(planned) == 16 and len(frames) == 26, (planned, margin)
    for attempt in range(RUN_ATTEMPTS):
        if attempt:
            bed.xdp_ok("unload", bed.rx_if)
            for b in (bed, bed2):
                run_ok(["ip", "netns", "exec", b.rx, "nft", "delete", "table", "netdev",
                        b.nft_table])
        bed.nft_counters({"src": saddr(CMP_SRC)}, table="xdprl")
        bed.load("--rate", f"{CMP_N}/1s", "--burst", CMP_B)
        nft_limit(bed2, CMP_SRC, CMP_N, CMP_B)
        rx0 = [link_rx_packets(b) for b in (bed, bed2)]
        with Receivers([bed, bed2]) as rcv:
            sent = send([bed, bed2], frames)
            got = rcv.stop()
        want, margin = model(sent, [1] * len(frames), [0] * len(frames), CMP_N, SEC, CMP_B,
                             groups)
        if margin >= MARGIN_NS:
            break
    else:
        pytest.fail(f"in {RUN_ATTEMPTS} runs the sender never kept its schedule to within "
                    f"{MARGIN_NS / 1e6} ms of a verdict's boundary (a stalled machine)")
    want_seqs = {f[4] for f, w in zip(frames, want) if w}
    assert want == planned, "sent late enough to change the model's verdicts"
    # Frame by frame: the socket in each receiver.
    assert passed_seqs(got, 0) == want_seqs, ("xdp-rl", sorted(passed_seqs(got, 0)))
    assert passed_seqs(got, 1) == want_seqs, ("nft limit", sorted(passed_seqs(got, 1)))
    # The kernel's counters: what came past XDP, nft's own verdicts, both links.
    assert bed.counts()["src"] == len(want_seqs), bed.counts()
    c = bed2.counts()
    assert (c["over"], c["within"]) == (len(frames) - len(want_seqs), len(want_seqs)), c
    assert [link_rx_packets(b) - r for b, r in zip((bed, bed2), rx0)] == [len(frames)] * 2
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (16, 10), st


@pytest.mark.parametrize("rate", ["1/4s", "6/1m", "4/1h"])
def test_slow_rate(bed, rate):
    """A slow rate (4 s, 10 s and 15 min a unit: past the 4.3 s that 32
    bits of whole ns held, which once cut such a cost to a fraction and
    passed nearly everything) is kept exactly: the burst of 2 at once,
    then nothing for a unit's cost."""
    src = "198.19.66.1"
    bed.nft_counters({"src": saddr(src)})
    bed.xdp_ok("load", bed.rx_if, "--rate", rate, "--burst", 2, "--table", bed.table)
    bed.send(src, 5)
    time.sleep(1.0)
    bed.send(src, 3)
    assert bed.counts()["src"] == 2, bed.counts()
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (2, 6), st


# ---- floods: the bound and no starving ---------------------------------------

def flood(bed, srcs, seconds, pps, sizes=(64,), seq0=0):
    """Frames round robin over @srcs (and @sizes), @pps a second for @seconds."""
    out = []
    n = int(seconds * pps)
    for i in range(n):
        src = srcs[i % len(srcs)]
        out.append([int(i * SEC / pps), src, dst_of(src), sizes[i % len(sizes)], seq0 + i])
    return out


def check_bound(frames, sent, got, n, dur_ns, burst, units_of, what):
    """The rate's promise over what passed and no starving; returns the
    units passed. XDP read its clock for a frame after the frame's send
    time (taken before the send) and before the receiver's timestamp of it
    (taken when the stack got it, after XDP): so [first send, last
    passed frame's timestamp] holds every pass, and [first passed frame's
    timestamp, last refused frame's send] lies within the XDP readings from
    the first frame to that one, however late a loaded machine ran XDP."""
    passed = passed_seqs(got)
    by_seq = {f[4]: i for i, f in enumerate(frames)}
    units = sum(units_of(frames[by_seq[s]]) for s in passed)
    ts = sorted(t for sock, _, _, t in got if sock == 0)
    assert ts and all(ts), "the receiver gave no timestamps"
    assert frames[0][4] in passed, f"{what}: the first frame was refused"
    # At most B + N t / DUR over any interval that holds every pass.
    t = ts[-1] - sent[0]
    hi = burst + n * (t + CLOCK_SLACK_NS) / dur_ns
    assert units <= hi, f"{what}: {units} units passed in {t / 1e6:.1f} ms, over {hi:.1f}"
    # Not starving: the last frame refused found TAT > now + tau - its cost,
    # TAT = the first frame's now + the passed units' costs, so at least
    # B - that frame's units + N t' / DUR passed, t' from the first frame
    # to that one.
    refused = [i for i, f in enumerate(frames) if f[4] not in passed]
    assert refused, f"{what}: nothing was refused: the flood did not reach the rate"
    last = refused[-1]
    t2 = sent[last] - ts[0]
    lo = burst - units_of(frames[last]) + n * (t2 - CLOCK_SLACK_NS) / dur_ns
    assert units >= lo, f"{what}: {units} units passed in {t2 / 1e6:.1f} ms, under {lo:.1f}"
    return units


@pytest.mark.parametrize("src", ["198.19.61.1", "2001:2:0:61::1"], ids=["ipv4", "ipv6"])
def test_flood_passes_the_rate_and_no_more(bed, src):
    n, burst = 200, 50
    bed.nft_counters({"src": saddr(src)})
    bed.load("--rate", f"{n}/1s", "--burst", burst)
    frames = flood(bed, [src], 1.5, 2000)
    with Receivers([bed]) as rcv:
        sent = send([bed], frames)
        got = rcv.stop()
    p = check_bound(frames, sent, got, n, SEC, burst, lambda f: 1, "flood")
    assert bed.counts()["src"] == p
    st = bed.stats()
    assert (st["passed"], st["dropped"]) == (p, len(frames) - p), st
    # About 50 + 200 x 1.5: the bound is far from the fixed window's 2 x limit.
    assert 300 <= p <= 360, p


def test_bytes_mixed_sizes(bed):
    """--bytes: units are frame bytes; 64, 600 and 1500-byte frames mixed."""
    src, n, burst = "198.19.62.1", 100_000, 3000
    sizes = (64, 600, 1500, 600)
    bed.nft_counters({"src": saddr(src)})
    bed.load("--rate", f"{n}/1s", "--burst", burst, "--bytes")
    frames = flood(bed, [src], 1.5, 1000, sizes)
    with Receivers([bed]) as rcv:
        sent = send([bed], frames)
        got = rcv.stop()
    b = check_bound(frames, sent, got, n, SEC, burst, lambda f: f[3], "bytes")
    st = bed.stats()
    assert st["passed_bytes"] == b, (st, b)
    assert st["passed_bytes"] + st["dropped_bytes"] == sum(f[3] for f in frames), st
    assert bed.counts()["src"] == st["passed"]
    # The burst: the first four frames, 2764 bytes, pass at once.
    assert {0, 1, 2, 3} <= passed_seqs(got), sorted(passed_seqs(got))[:8]


# ---- rules: per source and --shared ------------------------------------------

def test_rule_rates_per_source_and_shared(bed):
    """A rule's rate gives each source under it its own; a --shared rule's
    rate is one budget for the prefix. Same schedule for the four sources,
    interleaved; the model, keyed per source or per prefix, says each
    frame's verdict."""
    n, burst = 10, 4
    own = ["198.19.63.1", "198.19.63.2"]
    shared = ["198.19.64.1", "198.19.64.2"]
    other = "198.19.65.1"
    bed.nft_counters({s: saddr(s) for s in own + shared + [other]})
    bed.load("--limit", 100000, "--window", "1h")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.63.0/24", "--rate", f"{n}/1s", "--burst", burst)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.64.0/24", "--rate", f"{n}/1s", "--burst", burst,
               "--shared")
    # Each rule with its rate (the words around N/DUR and B are rule list's).
    text = bed.xdp_ok("rule", "list", bed.rx_if)
    assert re.search(rf"^198\.19\.63\.0/24 .*rate {n}/1s .*burst {burst}\b(?!.*shared)", text,
                     re.M), text
    assert re.search(rf"^198\.19\.64\.0/24 .*rate {n}/1s .*burst {burst}\b.*shared", text,
                     re.M), text
    srcs = own + shared + [other]
    # At 0 ms six frames each; at 250 ms one each (2.5 costs earned: the own
    # sources pass, the shared prefix passes two); at 475 ms one each.
    frames = []
    for ms, k in ((0, 6), (250, 1), (475, 1)):
        for _ in range(k):
            for s in srcs:
                frames.append([ms * 1_000_000, s, dst_of(s), 64, len(frames)])
    keys = [f[1] if f[1] in own else "shared" if f[1] in shared else None for f in frames]
    limited = [i for i, k in enumerate(keys) if k]
    for attempt in range(RUN_ATTEMPTS):
        if attempt:
            for s in own + shared:
                bed.xdp_ok("reset", bed.rx_if, s)
            time.sleep(0.5)
        c0 = bed.counts()
        with Receivers([bed]) as rcv:
            sent = send([bed], frames)
            got = rcv.stop()
        want, margin = model([sent[i] for i in limited], [1] * len(limited),
                             [keys[i] for i in limited], n, SEC, burst,
                             [frames[i][0] for i in limited])
        if margin >= MARGIN_NS:
            break
    else:
        pytest.fail(f"in {RUN_ATTEMPTS} runs the sender never kept its schedule to within "
                    f"{MARGIN_NS / 1e6} ms of a verdict's boundary")
    want_seqs = {frames[i][4] for i, w in zip(limited, want) if w}
    want_seqs |= {f[4] for f in frames if f[1] == other}
    assert passed_seqs(got) == want_seqs, sorted(passed_seqs(got) ^ want_seqs)
    c = bed.counts()
    got_n = {s: c[s] - c0.get(s, 0) for s in srcs}
    # Per source: 4 at once, then 1 and 1; shared: 4 for both, then 2, then 2.
    assert got_n == {own[0]: 6, own[1]: 6, shared[0]: 4, shared[1]: 4, other: 8}, got_n


# ---- the helpers' entry point -------------------------------------------------

if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "send":
        print(json.dumps(helper_send(json.load(sys.stdin))))
    elif what == "receive":
        print(json.dumps(helper_receive(json.loads(sys.stdin.readline()))), flush=True)
    else:
        sys.exit("usage: test_rate.py send|receive (the tests' helpers; JSON on stdin)")
