# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""`xdp-rl capture`: the packets the limiter judged, in a pcapng file that
tcpdump and tshark read, each with its verdict in its comment; filters,
sampling, bounds, one capture at a time, and a capture killed with -9.

Ground truth: what was sent, and `xdp-rl stats`. Every address is in
198.18.0.0/15; every capture is bounded (--duration) and killed at the end
whatever happens.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import rlbed

CAPTURE_TIMEOUT = 30
LEASE_S = 5  # user/capture.h: CAPTURE_LEASE_NS


@pytest.fixture(scope="module", autouse=True)
def readers():
    for tool in ("tcpdump", "tshark"):
        if not shutil.which(tool):
            pytest.skip(f"'{tool}' is not installed (scripts/deps.sh installs it)")


class Capture:
    """A running `xdp-rl capture`, started and waited for: its lease is set
    when its first line is on stderr."""

    def __init__(self, bed, *args, out=None, stdout=subprocess.DEVNULL):
        argv = bed.argv("capture", bed.rx_if, *args, "--duration", f"{CAPTURE_TIMEOUT}s")
        if out:
            argv += ["-w", out]
        self.p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, text=True)
        self.first = self.p.stderr.readline()
        assert "capturing on" in self.first, \
            f"capture did not start: {self.first}{self.p.stderr.read()}"

    def stop(self, sig=signal.SIGINT):
        """Stop it with @sig; its exit status and the rest of its stderr."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            _, err = self.p.communicate(timeout=CAPTURE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        return self.p.returncode, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.communicate()


def summary(err):
    """The numbers of the capture's last line on stderr."""
    m = re.search(r"(\d+) packets captured, (\d+) lost by the kernel's buffer, (\d+) sampled "
                  r"out, (\d+) filtered out \(of (\d+) judged\), (\d+) past the bounds", err)
    assert m, err
    return dict(zip(("captured", "lost", "sampled", "filtered", "judged", "past"),
                    map(int, m.groups())))


def tshark(path):
    """[(source, comment)] of each packet of @path, as tshark reads it."""
    r = rlbed.run(["tshark", "-r", path, "-T", "fields", "-e", "ip.src", "-e",
                   "frame.comment"])
    if r.returncode != 0 or "frame.comment" in r.stderr:
        r = rlbed.run(["tshark", "-r", path, "-T", "fields", "-e", "ip.src", "-e",
                       "pkt_comment"])
    assert r.returncode == 0, r.stderr
    return [tuple(line.split("\t", 1)) for line in r.stdout.splitlines() if line]


def tcpdump_count(path):
    r = rlbed.run(["tcpdump", "-nn", "-r", path])
    assert r.returncode == 0, r.stderr
    return len([line for line in r.stdout.splitlines() if line.strip()])


def verdicts(pkts):
    """{(source, verdict, action): n}."""
    out = {}
    for src, comment in pkts:
        m = re.match(r"xdp-rl verdict=(\S+) action=(pass|drop)( dry-run)? cpu=\d+$", comment)
        assert m, comment
        key = (src, m.group(1) + (m.group(3) or ""), m.group(2))
        out[key] = out.get(key, 0) + 1
    return out


@pytest.mark.kernels
def test_capture_writes_each_packet_with_its_verdict(bed, tmp_path):
    srcs = ["198.19.1.1", "198.19.1.2"]
    limit, sent = 5, 8
    bed.load("--limit", limit, "--window", "1h")
    out = str(tmp_path / "all.pcapng")
    cap = Capture(bed, out=out)
    try:
        bed.send(srcs, sent)
    finally:
        rc, err = cap.stop()
    assert rc == 0, err
    s = summary(err)
    st = bed.stats()
    assert st["passed"] == limit * 2 and st["dropped"] == (sent - limit) * 2, st
    assert s["captured"] == sent * 2 and s["lost"] == 0 and s["sampled"] == 0, s
    got = verdicts(tshark(out))
    for src in srcs:
        assert got[(src, "passed", "pass")] == limit, got
        assert got[(src, "dropped", "drop")] == sent - limit, got
    assert sum(got.values()) == st["passed"] + st["dropped"], (got, st)
    assert tcpdump_count(out) == sent * 2
    assert bed.status()["capture"] is None


def test_capture_to_stdout_into_tcpdump(bed, tmp_path):
    bed.load("--limit", 100, "--window", "1h")
    err = tmp_path / "err"
    sh = (f"{' '.join(bed.argv('capture', bed.rx_if, '-w', '-', '-c', '6', '--duration', '30s'))}"
          f" 2>{err} | tcpdump -nn -r - 2>/dev/null")
    p = subprocess.Popen(["bash", "-c", sh], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 10
        while "capturing on" not in (err.read_text() if err.exists() else ""):
            assert time.time() < deadline and p.poll() is None, err.read_text()
            time.sleep(0.05)
        bed.send("198.19.2.1", 10)
        out, _ = p.communicate(timeout=CAPTURE_TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 6 and all("198.19.2.1" in line for line in lines), out
    assert summary(err.read_text())["captured"] == 6


def test_capture_filters_by_verdict_and_source(bed, tmp_path):
    bed.load("--limit", 3, "--window", "1h")
    out = str(tmp_path / "f.pcapng")
    cap = Capture(bed, "--dropped", "--src", "198.19.3.0/24", out=out)
    try:
        bed.send(["198.19.3.1", "198.19.4.1"], 7)
    finally:
        rc, err = cap.stop()
    assert rc == 0, err
    got = verdicts(tshark(out))
    assert got == {("198.19.3.1", "dropped", "drop"): 4}, got
    s = summary(err)
    assert s["captured"] == 4 and s["judged"] == 14 and s["filtered"] == 10, s


def test_capture_sampling_within_its_bound(bed, tmp_path):
    bed.load("--limit", 1000, "--window", "1h")
    out = str(tmp_path / "s.pcapng")
    n, k = 400, 10
    cap = Capture(bed, "--sample", k, out=out)
    try:
        bed.send("198.19.5.1", n)
    finally:
        rc, err = cap.stop()
    assert rc == 0, err
    s = summary(err)
    cpus = os.cpu_count()
    got = len(tshark(out))
    assert s["captured"] == got and s["judged"] == n, s
    # One in k per CPU, the first of each run: between n/k and n/k + one per CPU.
    assert n // k <= got <= n // k + cpus, (got, s)
    assert s["sampled"] == n - got, s


def test_capture_bounds_and_dry_run(bed, tmp_path):
    bed.load("--limit", 2, "--window", "1h", "--dry-run")
    out = str(tmp_path / "c.pcapng")
    cap = Capture(bed, "-c", 3, "-s", 40, out=out)
    try:
        bed.send("198.19.6.1", 6)
        rc, err = cap.p.wait(timeout=CAPTURE_TIMEOUT), cap.p.stderr.read()
    finally:
        cap.kill()
    assert rc == 0, err
    assert "the packet count reached" in err, err
    pkts = tshark(out)
    assert len(pkts) == 3, pkts
    r = rlbed.run_ok(["tshark", "-r", out, "-T", "fields", "-e", "frame.cap_len", "-e",
                      "frame.len"])
    for line in r.stdout.split("\n")[:3]:
        cap_len, length = map(int, line.split())
        assert cap_len == 40 and length == 64, line
    # Within the budget the first two pass; the third would drop (dry run).
    got = verdicts(pkts)
    assert got == {("198.19.6.1", "passed", "pass"): 2,
                   ("198.19.6.1", "dropped dry-run", "pass"): 1}, got


def test_capture_rule_deny_and_new_source_refusals(bed, tmp_path):
    bed.load("--limit", 100, "--window", "1h", "--new-sources", "1/1h",
             "--on-table-full", "drop")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.7.0/24", "--deny")
    out = str(tmp_path / "r.pcapng")
    cap = Capture(bed, "--denied", "--full", out=out)
    try:
        bed.send(["198.19.7.1", "198.19.8.1", "198.19.8.2"], 2)
    finally:
        rc, err = cap.stop()
    assert rc == 0, err
    got = verdicts(tshark(out))
    assert got[("198.19.7.1", "denied", "drop")] == 2, got
    # The first new source takes the one slot; the second is refused.
    assert got.get(("198.19.8.2", "full", "drop"), 0) + \
        got.get(("198.19.8.1", "full", "drop"), 0) == 2, got
    st = bed.stats()
    assert st["denied"] == 2 and st["dropped"] == 2, st


def pinned_capture(bed):
    ino = rlbed.run_ok(["ip", "netns", "exec", bed.rx, "stat", "-L", "-c", "%i",
                        "/proc/self/ns/net"]).stdout.strip()
    idx = json.loads(rlbed.run_ok(["ip", "-n", bed.rx, "-j", "link", "show",
                                   bed.rx_if]).stdout)[0]["ifindex"]
    paths = glob.glob(f"/sys/fs/bpf/xdp-rl/{ino}/{idx}/capture")
    return paths[0] if paths else None


def lease_of(path):
    r = rlbed.run_ok(["bpftool", "-j", "map", "dump", "pinned", path])
    v = json.loads(r.stdout)[0]
    v = v.get("formatted", v)["value"]
    return int(v["until_ns"]), int(v["pid"])


def test_one_capture_at_a_time_and_kill9(bed, tmp_path):
    bed.load("--limit", 100, "--window", "1h")
    out = str(tmp_path / "k.pcapng")
    first = Capture(bed, out=out)
    try:
        r = bed.xdp("capture", bed.rx_if, "-w", str(tmp_path / "second.pcapng"),
                    "--duration", "1s")
        assert r.returncode == 1 and f"pid {first.p.pid}" in r.stderr, r.stderr
        assert bed.status()["capture"]["pid"] == first.p.pid
        bed.send("198.19.9.1", 20)
        time.sleep(0.5)
    finally:
        first.kill()
    # Killed: a file of whole blocks, that tcpdump reads.
    assert tcpdump_count(out) >= 0
    assert rlbed.run(["tshark", "-r", out]).returncode == 0
    # The process is gone: no capture, whatever the lease says.
    assert bed.status()["capture"] is None
    path = pinned_capture(bed)
    if path:
        until, pid = lease_of(path)
        assert pid == first.p.pid and until > 0, (until, pid)
        time.sleep(LEASE_S + 0.5)
        bed.send("198.19.9.1", 1)  # the next packet clears a lease that ran out
        until, _ = lease_of(path)
        assert until == 0, until
    # And the next capture starts.
    again = Capture(bed, out=str(tmp_path / "again.pcapng"))
    rc, err = again.stop()
    assert rc == 0, err


def test_capture_stops_before_max_bytes(bed, tmp_path):
    bed.load("--limit", 100, "--window", "1h")
    out = tmp_path / "b.pcapng"
    cap = Capture(bed, "--max-bytes", 800, out=str(out))
    try:
        bed.send("198.19.10.1", 20)
        rc, err = cap.p.wait(timeout=CAPTURE_TIMEOUT), cap.p.stderr.read()
    finally:
        cap.kill()
    assert rc == 0 and "the byte bound reached" in err, err
    size = out.stat().st_size
    assert 0 < size <= 800, size
    n = len(tshark(str(out)))
    assert n == summary(err)["captured"] and 0 < n < 20, (n, err)
