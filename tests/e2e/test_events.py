# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""xdp-rl events: one record per source per window per limit, from the packet
that took it over, under a flood of many sources; --json; the --rate bound
and its count of what it suppressed; one reader at a time; a reader killed
with -9 leaves a lease that runs out; the metrics of over-limit windows and
of drops by reason (promtool)."""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

import rlbed
from test_metrics import parse, promtool_check, value

READY_TIMEOUT = 10


def start(bed, *args):
    """`xdp-rl events` on the bed's limiter, running, once it holds the lease."""
    p = subprocess.Popen(bed.argv("events", bed.rx_if, *[str(a) for a in args]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "reading (pid" in line, f"events did not start: {line!r} {p.stderr.read() if p.poll() is not None else ''}"
    return p


def stop(p, sig=signal.SIGINT):
    """Stop a reader: its stdout lines and its stderr, once it exited 0."""
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=rlbed.CMD_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    assert p.returncode == 0, f"events exited {p.returncode}: {err}"
    return out.splitlines(), err


def records(lines):
    return [json.loads(line) for line in lines]


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


@pytest.mark.kernels
def test_events_flood_one_record_per_source(bed):
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 4096)
    p = start(bed, "--json")
    try:
        bed.send([], 10, src_range="198.18.40.0+200")
        # Within the window the sources stay over: more frames, no more records.
        bed.send([], 3, src_range="198.18.40.0+200")
        assert wait_for(lambda: bed.stats()["over_limit"] >= 200)
        time.sleep(0.5)
    finally:
        lines, err = stop(p)
    evs = [e for e in records(lines) if e["kind"] == "source"]
    srcs = [e["source"] for e in evs]
    assert len(evs) == 200 and len(set(srcs)) == 200, (len(evs), len(set(srcs)))
    assert all(s.startswith("198.18.40.") and s.endswith("/32") for s in srcs)
    for e in evs:
        assert (e["limit"], e["window_ns"], e["count"], e["layer"]) == (5, 3600 * 10**9, 6, 0), e
        assert e["rule"] is None and e["family"] == "ipv4" and e["unit"] == "packets", e
        assert e["interface"] == bed.rx_if and e["time"].endswith("Z")
    st = bed.stats()
    assert st["over_limit"] == 200 and st["events_lost"] == 0, st
    assert st["drops_limit"] == st["dropped"] == 200 * 8, st
    assert "200 shown, 0 suppressed" in err, err


def test_events_text_rule_and_shared(bed):
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 4096)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.18.50.0/24", "--layer", "3/1h")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.18.51.0/24", "--layer", "4/1h", "--shared")
    p = start(bed)
    try:
        bed.send(["198.18.50.1", "198.18.51.1", "198.18.51.2", "198.18.52.1"], 8)
        bed.send(["2001:2:0:53::1", "2001:2:0:53::2"], 4)
        assert wait_for(lambda: bed.stats()["over_limit"] >= 4)
        time.sleep(0.5)
    finally:
        lines, err = stop(p)
    text = "\n".join(lines)
    assert len(lines) == 4, text
    # Both IPv6 sources are one key (--v6-prefix 64): over once, at its 6th packet.
    assert any("source 2001:2:0:53::/64 over 5/1h (layer 1): 6 packets, global limits" in l
               for l in lines), text
    assert any("source 198.18.50.1/32 over 3/1h (layer 1): 4 packets, rule 198.18.50.0/24" in l
               for l in lines), text
    assert any("shared 198.18.51.0/24 over 4/1h (layer 1): 5 packets, rule 198.18.51.0/24" in l
               for l in lines), text
    assert any("source 198.18.52.1/32 over 5/1h (layer 1): 6 packets, global limits" in l
               for l in lines), text


def test_events_rate_bound_counts_suppressed(bed):
    bed.load("--limit", 2, "--window", "1h", "--max-sources", 4096)
    p = start(bed, "--json", "--rate", "50/1h")
    try:
        bed.send([], 5, src_range="198.18.41.0+120")
        assert wait_for(lambda: bed.stats()["over_limit"] >= 120)
        time.sleep(0.5)
    finally:
        lines, err = stop(p, signal.SIGTERM)
    recs = records(lines)
    shown = [r for r in recs if r["kind"] == "source"]
    supp = [r for r in recs if r["kind"] == "suppressed"]
    assert len(shown) == 50, len(shown)
    # Said at the end, as a record of its own.
    assert supp and supp[-1]["suppressed_total"] == 70 and supp[-1]["lost"] == 0, supp
    assert "50 shown, 70 suppressed" in err, err


def test_events_count_and_duration_end(bed):
    bed.load("--limit", 2, "--window", "1h", "--max-sources", 4096)
    p = subprocess.Popen(bed.argv("events", bed.rx_if, "--json", "--count", 7),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "reading (pid" in p.stderr.readline()
    bed.send([], 4, src_range="198.18.42.0+20")
    out, err = p.communicate(timeout=rlbed.CMD_TIMEOUT)
    assert p.returncode == 0, err
    assert len(out.splitlines()) == 7 and "7 shown" in err, (out, err)
    t0 = time.monotonic()
    r = bed.xdp("events", bed.rx_if, "--duration", "1s")
    assert r.returncode == 0 and time.monotonic() - t0 < 5, r.stderr
    assert "0 shown" in r.stderr


def lease_file(bed):
    """The pinned ev_lease map of the bed's limiter."""
    ino = rlbed.run_ok(["ip", "netns", "exec", bed.rx, "stat", "-L", "-c", "%i",
                        "/proc/self/ns/net"]).stdout.strip()
    idx = json.loads(rlbed.run_ok(["ip", "-n", bed.rx, "-j", "link", "show",
                                   bed.rx_if]).stdout)[0]["ifindex"]
    paths = glob.glob(f"/sys/fs/bpf/xdp-rl/{ino}/{idx}/ev_lease")
    if not paths:
        pytest.skip("the limiter's pins are not under /sys/fs/bpf/xdp-rl here")
    return paths[0]


def lease_of(path):
    """(until_ns, pid) of the lease, read with bpftool."""
    r = rlbed.run_ok(["bpftool", "-j", "map", "dump", "pinned", path])
    v = json.loads(r.stdout)[0]
    v = v.get("formatted", v)["value"]
    return int(v["until_ns"]), int(v["pid"])


def coarse_ns():
    return time.clock_gettime_ns(getattr(time, "CLOCK_MONOTONIC_COARSE", 6))


def test_events_one_reader_and_kill9(bed):
    bed.load("--limit", 2, "--window", "1h", "--max-sources", 4096)
    a = start(bed, "--json")
    try:
        r = bed.xdp("events", bed.rx_if)
        assert r.returncode == 1 and f"pid {a.pid}" in r.stderr, r.stderr
    finally:
        a.kill()
        a.communicate()
    path = lease_file(bed) if os.path.exists("/sys/fs/bpf/xdp-rl") else None
    if path:
        until, pid = lease_of(path)
        assert pid == a.pid and until > coarse_ns(), (until, pid)
        # Nobody renews it: it runs out by itself, and the datapath writes nothing.
        assert wait_for(lambda: lease_of(path)[0] <= coarse_ns(), timeout=5)
    # A dead holder's lease is taken over at once; what it left in the ring is not shown.
    bed.send([], 4, src_range="198.18.43.0+10")
    c = start(bed, "--json")
    try:
        bed.send([], 4, src_range="198.18.44.0+10")
        assert wait_for(lambda: bed.stats()["over_limit"] >= 20)
        time.sleep(0.5)
    finally:
        lines, _ = stop(c)
    srcs = sorted(e["source"] for e in records(lines) if e["kind"] == "source")
    assert len(srcs) == 10 and all(s.startswith("198.18.44.") for s in srcs), srcs
    if path:
        assert lease_of(path) == (0, 0), "a reader gives its lease back on its way out"


def test_events_metrics(bed):
    bed.load("--limit", 3, "--window", "1h", "--max-sources", 4096)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.18.45.66", "--deny")
    bed.send([], 6, src_range="198.18.45.0+30")
    bed.send(["198.18.45.66"], 4)
    text = bed.xdp_ok("metrics")
    promtool_check(text)
    samples, types = parse(text)
    st = bed.stats()
    assert value(samples, "xdp_rl_over_limit_total", interface=bed.rx_if) == 30 == st["over_limit"]
    assert value(samples, "xdp_rl_drops_total", interface=bed.rx_if, reason="limit") == 90
    assert value(samples, "xdp_rl_drops_total", interface=bed.rx_if, reason="deny") == 4
    assert value(samples, "xdp_rl_drops_total", interface=bed.rx_if, reason="malformed") == 0
    assert value(samples, "xdp_rl_sources_over_limit", interface=bed.rx_if, family="ipv4") == 30
    assert value(samples, "xdp_rl_sources_over_limit", interface=bed.rx_if, family="ipv6") == 0
    assert types["xdp_rl_sources_over_limit"] == "gauge"
    assert types["xdp_rl_drops_total"] == "counter"
    text = bed.xdp_ok("stats", bed.rx_if)
    assert "over-limit" in text and "drops-limit" in text, text


def test_events_syslog(bed, tmp_path):
    """--syslog: each record as text, facility daemon, ident xdp-rl (the test
    build sends it to XDP_RL_SYSLOG, a socket this test binds)."""
    faults = os.path.join(rlbed.BUILD, "xdp-rl-faults")
    if not os.access(faults, os.X_OK):
        pytest.fail(f"{faults} is missing: make builds it")
    path = str(tmp_path / "log")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    bed.load("--limit", 2, "--window", "1h", "--max-sources", 4096)
    env = dict(os.environ, XDP_RL_SYSLOG=path)
    env.pop("XDP_RL_FAULT_AT", None)
    p = subprocess.Popen([faults, "-n", bed.rx, "events", bed.rx_if, "--syslog", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert "reading (pid" in p.stderr.readline()
        bed.send(["198.18.46.1", "198.18.46.2"], 4)
        got = sorted(sock.recv(65536).decode() for _ in range(2))
    finally:
        sock.close()
        lines, _ = stop(p)
    assert len(records(lines)) == 2
    for i, rec in enumerate(got):
        m = re.match(r"^<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d xdp-rl\[(\d+)\]: (.*)$", rec)
        assert m, rec
        assert int(m.group(1)) == 3 << 3 | 5, rec  # daemon.notice
        assert int(m.group(2)) == p.pid
        assert m.group(3) == (f"{bed.rx_if}: source 198.18.46.{i + 1}/32 over 2/1h (layer 1): "
                              "3 packets, global limits"), rec


def test_events_reader_survives_load_force(bed):
    """load --force keeps the ring and the lease (XDP_RL_KEEP): a reader goes on."""
    bed.load("--limit", 2, "--window", "1h", "--max-sources", 4096)
    p = start(bed, "--json")
    try:
        bed.send([], 4, src_range="198.18.47.0+5")
        bed.load("--limit", 3, "--window", "1h", "--max-sources", 4096, "--force")
        bed.send([], 5, src_range="198.18.48.0+5")
        assert wait_for(lambda: bed.stats()["over_limit"] >= 10)
        time.sleep(0.5)
    finally:
        lines, err = stop(p)
    evs = [e for e in records(lines) if e["kind"] == "source"]
    assert sorted((e["source"].rsplit(".", 1)[0], e["limit"]) for e in evs) == \
        [("198.18.47", 2)] * 5 + [("198.18.48", 3)] * 5, evs
