# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""xdp-rl beside another XDP program on one interface, through libxdp's
dispatcher (--attach shared): xdp-filter, from xdp-tools, as the other.

Ground truth: the receiver's nftables ingress counters (after XDP) for what
reached the stack, per source; `xdp-loader status` for what the interface
runs. Where the kernel cannot run libxdp's dispatcher (this machine's own:
its extension programs get EPERM), xdp-rl says so and attaches alone; the
kernel matrix (make test-kernels) runs the shared tests in Debian's 6.1 and
6.12, which can.
"""
import os
import shutil
import time

import pytest

import rlbed
from rlbed import run, run_ok

pytestmark = [pytest.mark.kernels, pytest.mark.kernels_one_table]

# The reason a test skips on a kernel without it (tests/kernels/suite.sh accepts
# it on this machine's own kernel only).
NO_DISPATCHER = "this kernel cannot run libxdp's dispatcher"

DENIED = "198.19.40.1"  # xdp-filter drops it (ip --mode src)
OTHER = "198.19.40.2"   # xdp-filter lets it through


def rules(*srcs):
    return {s: f"ip saddr {s}" for s in srcs}


def in_rx(bed, *argv):
    """A command in the receiver's network namespace, keeping this mount
    namespace (libxdp keeps its dispatcher's pins in /sys/fs/bpf, which `ip
    netns exec` would hide)."""
    return run(["nsenter", f"--net=/run/netns/{bed.rx}", *[str(a) for a in argv]])


def in_rx_ok(bed, *argv):
    r = in_rx(bed, *argv)
    assert r.returncode == 0, f"{argv}: rc {r.returncode}: {r.stderr}"
    return r.stdout


def programs(bed, dispatcher=False):
    """What `xdp-loader status` says the receiver's veth runs: [(priority, name)]
    of the programs under its dispatcher, or [(None, name)] for a program alone;
    with @dispatcher, the dispatcher's own line too, as (None, "xdp_dispatcher")."""
    out = in_rx_ok(bed, "xdp-loader", "status", bed.rx_if)
    progs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "=>":
            progs.append((int(f[1]), f[2]))
        elif f and f[0] == bed.rx_if and len(f) > 1 and not f[1].startswith("<"):
            if dispatcher or f[1] != "xdp_dispatcher":
                progs.append((None, f[1]))
    return progs


def xdp_filter(bed, *args):
    return in_rx_ok(bed, "xdp-filter", *args)


def dispatcher_runs(bed):
    """Whether this kernel runs libxdp's dispatcher, asked of xdp-filter alone
    (no xdp-rl): loaded, is it under a dispatcher or by itself?"""
    xdp_filter(bed, "load", "-m", "native", bed.rx_if)
    try:
        return (None, "xdp_dispatcher") in programs(bed, dispatcher=True)
    finally:
        xdp_filter(bed, "unload", bed.rx_if)


@pytest.fixture
def tools(bed):
    for t in ("xdp-filter", "xdp-loader", "nsenter"):
        if not shutil.which(t):
            pytest.skip(f"{t} is not installed (scripts/deps.sh installs xdp-tools)")
    yield bed
    in_rx(bed, "xdp-filter", "unload", bed.rx_if)


@pytest.fixture
def shared(tools):
    if not dispatcher_runs(tools):
        pytest.skip(f"{NO_DISPATCHER} (xdp-filter alone attaches by itself): the kernel "
                    "matrix runs this in Debian's 6.1 and 6.12")
    return tools


def test_load_shares_where_the_dispatcher_runs_else_says_why(tools):
    """--attach auto: through the dispatcher where the kernel runs it (as
    xdp-filter alone shows: no xdp-rl involved), else alone, saying why; and
    --attach shared refused there. Runs on every kernel, whichever it is."""
    bed = tools
    if dispatcher_runs(bed):
        out = bed.load("--limit", 5)
        assert "shared" in out and "attached alone" not in out, out
        st = bed.status()
        assert st["attach"] == "shared" and st["attached"], st
        assert [p["name"] for p in st["programs"]] == ["xdp_rl"], st
        assert programs(bed) == [(50, "xdp_rl")]
        # And another libxdp program can join it.
        xdp_filter(bed, "load", "-m", "native", bed.rx_if)
        assert programs(bed) == [(10, "xdpfilt_alw_all"), (50, "xdp_rl")]
    else:
        r = bed.xdp("load", bed.rx_if, "--attach", "shared")
        assert r.returncode == 1, r
        assert "libxdp's dispatcher cannot run on this kernel" in r.stderr, r.stderr
        assert "--attach alone" in r.stderr, r.stderr
        assert bed.limiters() == [] and bed.xdp_prog_id() is None

        out = bed.load("--limit", 5)
        assert "attached alone: libxdp's dispatcher cannot run on this kernel" in out, out
        st = bed.status()
        assert st["attach"] == "alone" and st["attached"], st
        assert [p["id"] for p in st["programs"]] == [bed.xdp_prog_id()], st
        # xdp-filter cannot join: the interface runs a program that is not a dispatcher.
        assert in_rx(bed, "xdp-filter", "load", "-m", "native", bed.rx_if).returncode != 0
    bed.nft_counters(rules(OTHER))
    bed.send(OTHER, 8)
    assert bed.counts()[OTHER] == 5


def test_shares_with_xdp_filter_loaded_after_it(shared):
    """xdp-rl first (priority 50), then xdp-filter (its own 10: it runs first)."""
    bed = shared
    bed.nft_counters(rules(DENIED, OTHER))
    out = bed.load("--limit", 5, "--window", "60s")
    assert "shared" in out and "priority 50" in out, out
    assert programs(bed) == [(50, "xdp_rl")]
    xdp_filter(bed, "load", "-m", "native", bed.rx_if)
    xdp_filter(bed, "ip", DENIED, "--mode", "src")
    assert programs(bed) == [(10, "xdpfilt_alw_all"), (50, "xdp_rl")]
    st = bed.status()
    assert st["attach"] == "shared" and st["attached"], st
    assert [(p["priority"], p["name"]) for p in st["programs"]] == programs(bed), st

    bed.send([DENIED, OTHER], 8)
    got = bed.counts()
    assert got[DENIED] == 0, got   # xdp-filter dropped it: xdp-rl never saw it
    assert got[OTHER] == 5, got    # xdp-rl's limit
    s = bed.stats()
    assert (s["passed"], s["dropped"]) == (5, 3), s

    # xdp-filter goes: xdp-rl goes on, its window as it was.
    xdp_filter(bed, "unload", bed.rx_if)
    assert programs(bed) == [(50, "xdp_rl")]
    bed.send([DENIED, OTHER], 6)
    got = bed.counts()
    assert got[OTHER] == 5 and got[DENIED] == 5, got
    assert bed.status()["attached"]

    bed.xdp_ok("unload", bed.rx_if)
    assert programs(bed) == []


def test_shares_with_xdp_filter_loaded_before_it(shared):
    """xdp-filter first; xdp-rl at priority 5 runs before it. What xdp-rl passes
    goes on to xdp-filter, or (--pass-to stack) straight to the stack."""
    bed = shared
    bed.nft_counters(rules(DENIED, OTHER))
    xdp_filter(bed, "load", "-m", "native", bed.rx_if)
    xdp_filter(bed, "ip", DENIED, "--mode", "src")
    bed.load("--limit", 5, "--window", "60s", "--priority", 5)
    assert programs(bed) == [(5, "xdp_rl"), (10, "xdpfilt_alw_all")]

    bed.send([DENIED, OTHER], 4)
    got = bed.counts()
    assert got[DENIED] == 0 and got[OTHER] == 4, got
    s = bed.stats()
    assert (s["passed"], s["dropped"]) == (8, 0), s  # xdp-rl saw both sources

    # A replacement with --pass-to stack: the windows stay, xdp-filter stays,
    # and what xdp-rl passes skips it.
    out = bed.load("--limit", 10, "--window", "60s", "--priority", 5, "--pass-to", "stack",
                   "--force")
    assert "goes to the stack" in out, out
    assert programs(bed) == [(5, "xdp_rl"), (10, "xdpfilt_alw_all")]
    bed.send([DENIED, OTHER], 8)           # each source's window: 4 -> 12, limit 10
    got = bed.counts()
    assert got[DENIED] == 6 and got[OTHER] == 10, got
    s = bed.stats()
    assert (s["passed"], s["dropped"]) == (20, 4), s

    # xdp-rl goes first this time: xdp-filter goes on alone under its dispatcher.
    bed.xdp_ok("unload", bed.rx_if)
    assert programs(bed) == [(10, "xdpfilt_alw_all")]
    bed.send([DENIED, OTHER], 3)
    got = bed.counts()
    assert got[DENIED] == 6 and got[OTHER] == 13, got


def test_a_replacement_hands_over_at_once(shared):
    """load --force under the dispatcher: the new program joins beside the old,
    one map update hands the packets over, the old leaves. Nothing counted twice,
    nothing missed: the window's count is exact across it."""
    bed = shared
    bed.nft_counters(rules(OTHER))
    bed.load("--limit", 20, "--window", "60s")
    bed.send(OTHER, 7)
    first = [p for p in bed.status()["programs"] if p["name"] == "xdp_rl"]
    bed.load("--limit", 20, "--window", "60s", "--force")
    progs = [p for p in bed.status()["programs"] if p["name"] == "xdp_rl"]
    assert len(first) == 1 and len(progs) == 1 and progs[0]["id"] != first[0]["id"], \
        (first, progs)
    bed.send(OTHER, 20)
    assert bed.counts()[OTHER] == 20
    assert bed.get(OTHER)["count"] == 27


def test_gc_frees_a_shared_limiter_whose_namespace_was_deleted(shared):
    """A namespace deleted under a shared limiter takes its interface and the
    dispatcher; libxdp's pins of that dispatcher still hold xdp-rl's program and
    maps. `gc` removes both."""
    bed = shared
    bed.load("--limit", 5)
    prog = bed.status()["prog_id"]
    ns_ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    run_ok(["ip", "netns", "del", bed.rx])
    out = run_ok([rlbed.BIN, "gc"]).stdout
    assert f"removed the limiter loaded on {bed.rx_if}" in out, out
    assert "its namespace is gone" in out, out
    assert not os.path.exists(f"/sys/fs/bpf/xdp-rl/{ns_ino}")
    deadline = time.monotonic() + 10
    while run(["bpftool", "prog", "show", "id", str(prog)]).returncode == 0:
        assert time.monotonic() < deadline, f"program {prog} outlived gc: something still holds it"
        time.sleep(0.2)
