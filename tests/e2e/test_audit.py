# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Every change is recorded in syslog with who, what and the result.

The record goes to /dev/log in the installed build; the test build
(build/xdp-rl-faults) sends it to XDP_RL_SYSLOG instead, a unix datagram
socket this test binds, so what the command sent is read as syslog would
read it. build/xdp-rl ignores XDP_RL_SYSLOG.
"""
import os
import re
import socket

import pytest

import rlbed

FAULTS = os.path.join(rlbed.BUILD, "xdp-rl-faults")
RECORD = re.compile(r"^<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d xdp-rl\[(\d+)\]: (.*)$")
AUTHPRIV = 10


@pytest.fixture
def syslog(tmp_path):
    path = str(tmp_path / "log")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(5)
    try:
        yield path, s
    finally:
        s.close()


def run_logged(bed, sock_path, *args, binary=FAULTS):
    env = dict(os.environ, XDP_RL_SYSLOG=sock_path, SUDO_USER="alice")
    env.pop("XDP_RL_FAULT_AT", None)
    return rlbed.run([binary, "-n", bed.rx, *[str(a) for a in args]], env=env)


def record(sock):
    data = sock.recv(65536).decode()
    m = RECORD.match(data)
    assert m, f"not a syslog record: {data!r}"
    pri, pid, text = int(m.group(1)), int(m.group(2)), m.group(3)
    assert "\n" not in data
    return pri >> 3, pri & 7, text


def nothing(sock):
    sock.settimeout(0.3)
    try:
        data = sock.recv(65536)
    except socket.timeout:
        return True
    finally:
        sock.settimeout(5)
    raise AssertionError(f"unexpected record: {data!r}")


def test_changes_are_recorded(bed, syslog, tmp_path):
    path, sock = syslog
    who = "uid 0 (root)"
    ns = f"xdp-rl -n {bed.rx}"
    steps = [
        (("load", bed.rx_if, "--limit", 7, "--max-layers", 2), f"load {bed.rx_if} --limit 7 --max-layers 2"),
        (("set", bed.rx_if, "--limit", 8), f"set {bed.rx_if} --limit 8"),
        (("rule", "add", bed.rx_if, "198.19.9.0/24", "--layer", "2/1s"),
         f"rule add {bed.rx_if} 198.19.9.0/24 --layer 2/1s"),
        (("charge", bed.rx_if, "198.19.1.1", 3), f"charge {bed.rx_if} 198.19.1.1 3"),
        (("reset", bed.rx_if, "--all"), f"reset {bed.rx_if} --all"),
        (("rule", "del", bed.rx_if, "198.19.9.0/24"), f"rule del {bed.rx_if} 198.19.9.0/24"),
    ]
    for args, line in steps:
        r = run_logged(bed, path, *args)
        assert r.returncode == 0, r.stderr
        facility, severity, text = record(sock)
        assert facility == AUTHPRIV and severity == 5, (facility, severity, text)  # notice
        assert text.startswith(who) and ", sudo user alice: " in text, text
        assert text.endswith(f": {ns} {line}: done"), text
    # Reading changes nothing and records nothing.
    for args in (("status",), ("stats", bed.rx_if), ("rule", "list", bed.rx_if),
                 ("metrics",), ("get", bed.rx_if, "198.19.1.1"), ("config", bed.rx_if)):
        r = run_logged(bed, path, *args)
        assert r.returncode == 0, (args, r.stderr)
        assert nothing(sock)
    # Nor does checking a file.
    conf = tmp_path / "l.conf"
    conf.write_text("limit 9\nwindow 1s\n")
    r = run_logged(bed, path, "apply", "--check", str(conf))
    assert r.returncode == 0, r.stderr
    assert nothing(sock)

    # A failure: the exit code and the first error, as the command printed it.
    r = run_logged(bed, path, "set", "nosuch0", "--limit", 5)
    assert r.returncode == 1
    _, severity, text = record(sock)
    assert severity == 4, text  # warning
    err = r.stderr.splitlines()[0].removeprefix("xdp-rl: ")
    assert text.endswith(f": {ns} set nosuch0 --limit 5: failed (exit 1): {err}"), (text, err)
    # A usage error is an attempt too; the command line is quoted as a shell needs it.
    r = run_logged(bed, path, "reset", bed.rx_if, "198.19.1.1\n'x", "--count", "a b")
    assert r.returncode == 2
    _, _, text = record(sock)
    assert f"{ns} reset {bed.rx_if} $'198.19.1.1\\x0a\\'x' --count 'a b': failed (exit 2): " \
        in text, text

    r = run_logged(bed, path, "unload", bed.rx_if)
    assert r.returncode == 0, r.stderr
    assert record(sock)[2].endswith(f": {ns} unload {bed.rx_if}: done")


def test_installed_build_ignores_the_test_socket(bed, syslog):
    """build/xdp-rl sends its records to /dev/log, whatever XDP_RL_SYSLOG says."""
    path, sock = syslog
    r = run_logged(bed, path, "load", bed.rx_if, "--limit", 5, binary=rlbed.BIN)
    assert r.returncode == 0, r.stderr
    assert nothing(sock)
