# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Bad input is a usage error (exit 2) that changes nothing; runtime failures
exit 1 and name the object; without privileges xdp-rl names what is missing.

Every case runs against one running limiter, which must be the same after it.
"""
import json
import os
import shutil
import tempfile

import pytest

from rlbed import BIN, caps_did_not_reach, run, run_ok

IF = "{IF}"             # replaced by the receiver's veth
SRC = "198.19.20.1"     # a source with an open window in the shared limiter
BIG = "99999999999999999999999"


def case(*argv, mention=None, id=None):
    return pytest.param(list(argv), mention, id=id or " ".join(a or '""' for a in argv))


USAGE = []
for cmd in ("load", "set"):
    USAGE += [
        case(cmd, IF, "--limit", "12abc", mention="12abc"),
        case(cmd, IF, "--limit", "-3", mention="-3"),
        case(cmd, IF, "--limit", "", mention="--limit"),
        case(cmd, IF, "--limit", "0", mention="--limit"),
        case(cmd, IF, "--limit", " 5", mention="--limit"),
        case(cmd, IF, "--limit", "5 ", mention="--limit"),
        case(cmd, IF, "--limit", "+5", mention="+5"),
        case(cmd, IF, "--limit", "0x10", mention="0x10"),
        case(cmd, IF, "--limit", BIG, mention=BIG),
        case(cmd, IF, "--limit", "18446744073709551615", mention="18446744073709551615"),
        case(cmd, IF, "--limit", mention="--limit"),
        case(cmd, IF, "--window", "5", mention="'5'"),
        case(cmd, IF, "--window", "0s", mention="0s"),
        case(cmd, IF, "--window", "1x", mention="1x"),
        case(cmd, IF, "--window", "1.5ns", mention="1.5ns"),
        case(cmd, IF, "--window", "1.s", mention="1.s"),
        case(cmd, IF, "--window", "1 s", mention="1 s"),
        case(cmd, IF, "--window", "", mention="--window"),
        case(cmd, IF, "--window", "-1s", mention="-1s"),
        case(cmd, IF, "--window", "999999999h", mention="999999999h"),
        case(cmd, IF, "--window", BIG + "s", mention=BIG),
        case(cmd, IF, "--per-key", "--aligned", mention="--aligned"),
        case(cmd, IF, "--bogus", mention="--bogus"),
        case(cmd, "--limit", "5", mention="IFACE"),
        case(cmd, "", "--limit", "5", mention="empty IFACE"),
        case(cmd, IF, "extra", "--limit", "5", mention="extra"),
    ]
USAGE += [
    case("load", IF, "--v4-prefix", "33", mention="33"),
    case("load", IF, "--v6-prefix", "129", mention="129"),
    case("load", IF, "--v4-prefix", "-1", mention="-1"),
    case("load", IF, "--v4-prefix", "24x", mention="24x"),
    case("load", IF, "--mode", "bogus", mention="bogus"),
    case("load", IF, "--max-sources", "0", mention="--max-sources"),
    case("load", IF, "--max-sources", "1", mention="must be at least 16"),
    case("load", IF, "--limit", "5", "--limit", "6", mention="'--limit' given twice"),
    case("set", IF, "--limit", "5", "--limit", "6", mention="'--limit' given twice"),
    case("set", IF, "--window", "1s", "--window=2s", mention="'--window' given twice"),
    case("rule", "add", IF, "198.19.5.0/24", "--deny", "--deny", mention="given twice"),
    case("rule", "add", IF, "::ffff:198.18.5.1", "--deny",
         mention="write it as IPv4 (198.18.5.1/32)"),
    case("load", IF, "--max-sources", BIG, mention=BIG),
    case("load", IF, "--dry-run", "--enforce", mention="--enforce"),
    case("set", IF, "--dry-run", "--enforce", mention="--enforce"),
    case("set", IF, "--v4-prefix", "24", mention="--v4-prefix"),
    case("set", IF, "--mode", "generic", mention="--mode"),
    case("set", IF, mention="nothing to change"),
    case("get", IF, "not-an-ip", mention="not-an-ip"),
    case("get", IF, "not-an-ip", "--json", mention="not-an-ip"),
    case("get", IF, SRC + "/32", "--json", mention=SRC + "/32"),
    case("get", IF, "", "--json", mention="ADDRESS"),
    case("get", IF, "--json", mention="ADDRESS"),
    case("get", "--json", mention="IFACE"),
    case("get", IF, SRC, "--limit", "5", mention="--limit"),
    case("get", IF, SRC, "extra", mention="extra"),
    case("top", IF, "--count", "12abc", "--json", mention="12abc"),
    case("top", IF, "--count", "-3", "--json", mention="-3"),
    case("top", IF, "--count", "", "--json", mention="--count"),
    case("top", IF, "--count", "0", "--json", mention="--count"),
    case("top", IF, "--count", BIG, "--json", mention=BIG),
    case("top", IF, "--limit", "5", "--json", mention="--limit"),
    case("top", "--json", mention="IFACE"),
    case("stats", IF, "--watch", "12abc", "--json", mention="12abc"),
    case("stats", IF, "--watch", "-3", "--json", mention="-3"),
    case("stats", IF, "--watch", "", "--json", mention="--watch"),
    case("stats", IF, "--watch", "0", "--json", mention="--watch"),
    case("stats", IF, "--watch", BIG, "--json", mention=BIG),
    case("stats", IF, "--limit", "5", "--json", mention="--limit"),
    case("stats", "--json", mention="IFACE"),
    case("status", IF, "extra", "--json", mention="extra"),
    case("status", "--bogus", "--json", mention="--bogus"),
    case("reset", IF, mention="--all"),
    case("reset", IF, SRC, "--all", mention="--all"),
    case("reset", IF, "not-an-ip", mention="not-an-ip"),
    case("reset", mention="IFACE"),
    case("unload", mention="IFACE"),
    case("unload", IF, "--bogus", mention="--bogus"),
    case("unload", IF, "extra", mention="extra"),
    case("frobnicate", IF, mention="frobnicate"),
    case("st", IF, "--json", mention="ambiguous command 'st'"),
    case("--bogus", "status", mention="--bogus"),
]

NOT_LOADED = [
    case("stats", "lo", "--json"),
    case("unload", "lo"),
    case("status", "lo", "--json"),
    case("get", "lo", SRC, "--json"),
    case("top", "lo", "--json"),
    case("set", "lo", "--limit", "5"),
    case("reset", "lo", "--all"),
]


@pytest.fixture(scope="module")
def limiter(module_bed):
    bed = module_bed
    bed.load("--limit", 10, "--window", "10m")
    bed.send(SRC, 15)
    assert bed.get(SRC)["count"] == 15
    return bed


def snapshot(bed):
    st = bed.status()
    for k in ("active_sources_v4", "active_sources_v6"):
        st.pop(k)
    stats = {k: v for k, v in bed.stats().items() if k not in ("time", "time_ms")}
    return st, stats, bed.get(SRC)["count"], bed.xdp_prog_id()


def fill(bed, argv):
    return [bed.rx_if if a == IF else a for a in argv]


@pytest.mark.parametrize("argv,mention", USAGE)
def test_usage_error(limiter, argv, mention):
    bed = limiter
    before = snapshot(bed)
    r = bed.xdp(*fill(bed, argv))
    assert r.returncode == 2, r
    assert r.stderr.startswith("xdp-rl:"), r.stderr
    assert r.stdout == "", r.stdout
    assert mention in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert snapshot(bed) == before


@pytest.mark.parametrize("argv,mention", NOT_LOADED)
def test_not_loaded_there(limiter, argv, mention):
    bed = limiter
    before = snapshot(bed)
    r = bed.xdp(*argv)
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:"), r.stderr
    assert "'lo'" in r.stderr and "not loaded" in r.stderr, r.stderr
    assert r.stdout == ""
    assert snapshot(bed) == before


@pytest.mark.parametrize("argv", [
    ["load", "nosuchif0", "--limit", "5"],
    ["stats", "nosuchif0", "--json"],
    ["get", "nosuchif0", SRC, "--json"],
    ["load", "x" * 20],
], ids=["load", "stats", "get", "name-too-long"])
def test_no_such_interface(limiter, argv):
    bed = limiter
    before = snapshot(bed)
    r = bed.xdp(*argv)
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and f"'{argv[1]}'" in r.stderr, r.stderr
    # The namespace's own list of interfaces, which plain `ip link` is not.
    assert f"(see 'ip -n {bed.rx} link')" in r.stderr, r.stderr
    assert r.stdout == ""
    assert snapshot(bed) == before
    assert bed.limiters()[0]["interface"] == bed.rx_if and len(bed.limiters()) == 1


def test_a_name_of_any_bytes_is_quoted_on_one_line(limiter):
    """A tab, an escape or a byte 0xff in what a user typed comes back as
    \\xNN: a message stays one line of text, whatever it quotes."""
    bed = limiter
    name = "a\tb\x1b[2J\udcff"   # \udcff: the byte 0xff, as Python passes argv
    for argv in (["load", name, "--limit", "5"], ["get", bed.rx_if, name]):
        r = bed.xdp(*argv)
        assert r.returncode in (1, 2), (argv, r)
        assert "a\\x09b\\x1b[2J\\xff" in r.stderr, (argv, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and "\x1b" not in r.stderr, (argv, r.stderr)


@pytest.mark.parametrize("argv", [["status"], ["status", "--json"], ["load", "lo"],
                                  ["stats", "lo", "--json"]])
def test_no_such_netns(privileged, argv):
    ns = f"nosuchns{os.getpid()}"
    assert not os.path.exists(f"/run/netns/{ns}")
    r = run([BIN, "-n", ns, *argv])
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and f"'{ns}'" in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("ns", ["", "a/b"])
def test_netns_that_is_not_a_name(ns):
    r = run([BIN, "-n", ns, "status"])
    assert r.returncode == 2 and "invalid -n" in r.stderr and r.stdout == "", r


@pytest.fixture
def nobody_bin():
    """A copy of xdp-rl that user 65534 can run, wherever the repo is."""
    if os.geteuid() != 0:
        pytest.skip("setpriv --reuid needs root")
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    d = tempfile.mkdtemp(prefix="xdp-rl-e2e-")
    try:
        os.chmod(d, 0o755)
        path = os.path.join(d, "xdp-rl")
        shutil.copy(BIN, path)
        os.chmod(path, 0o755)
        yield path
    finally:
        shutil.rmtree(d)


def as_nobody(path, *args):
    return run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", path, *args])


def test_unprivileged_user_is_told_what_is_missing(limiter, nobody_bin):
    bed = limiter
    before = snapshot(bed)
    cases = [
        (["status"], ["CAP_BPF"]),
        (["status", "--json"], ["CAP_BPF"]),
        (["load", bed.rx_if, "--limit", "5"], ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN"]),
        (["-n", bed.rx, "status"], ["CAP_BPF", "CAP_SYS_ADMIN"]),
        (["-n", bed.rx, "load", bed.rx_if, "--limit", "5", "--force"],
         ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"]),
        (["-n", bed.rx, "unload", bed.rx_if], ["CAP_BPF", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"]),
    ]
    for argv, caps in cases:
        r = as_nobody(nobody_bin, *argv)
        assert r.returncode == 1, (argv, r)
        assert r.stderr.startswith("xdp-rl:"), (argv, r.stderr)
        for c in caps:
            assert c in r.stderr, (argv, c, r.stderr)
        assert r.stdout == "", (argv, r.stdout)
    # Usage errors are still usage errors, privileges or not.
    r = as_nobody(nobody_bin, "load", "--limit", "12abc")
    assert r.returncode == 2 and r.stderr.startswith("xdp-rl:"), r
    r = as_nobody(nobody_bin, "load", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:"), r
    assert snapshot(bed) == before


def test_load_without_perfmon_names_it(limiter, nobody_bin):
    """The verifier refuses the program's arithmetic on pointers into the
    source tables without CAP_PERFMON: load says so before trying, and
    changes nothing."""
    bed = limiter
    before = snapshot(bed)
    caps = "+bpf,+net_admin,+sys_admin"
    r = run(["setpriv", f"--inh-caps={caps}", f"--ambient-caps={caps}",
             "--bounding-set=-perfmon", nobody_bin, "-n", bed.rx, "load", bed.rx_if,
             "--limit", "5", "--force"])
    assert r.returncode == 1, r
    assert "missing capabilities CAP_PERFMON" in r.stderr, r.stderr
    assert snapshot(bed) == before


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_capable_non_root_status_does_not_hide_the_limiter(limiter, nobody_bin, json_out):
    """User 65534 with CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN passes the
    capability check but cannot read the root-only pin folders. `status` must
    say so (exit 1, the cause), not report that nothing is loaded."""
    bed = limiter
    caps = "+bpf,+net_admin,+sys_admin"
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            f"--inh-caps={caps}", f"--ambient-caps={caps}", nobody_bin, "-n", bed.rx, "status"]
    if json_out:
        argv.append("--json")
    # The same user reading one interface is told why it cannot: the folder is root-only.
    r = run(argv[:-1 if json_out else None] + [bed.rx_if])
    caps_did_not_reach(r)
    assert r.returncode == 1 and "Permission denied" in r.stderr, r

    r = run(argv)
    assert "no xdp-rl limiter" not in r.stdout, \
        f"status claims nothing is loaded while {bed.rx_if} has a limiter: {r}"
    if json_out and r.stdout:
        assert json.loads(r.stdout)["limiters"] != [], r
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and "Permission denied" in r.stderr, r


def test_unload_a_limiter_whose_interface_is_gone(bed):
    """`unload NAME` after NAME was deleted removes what its limiter left."""
    extra, peer = f"{bed.tag}-g", f"{bed.tag}-h"
    run_ok(["ip", "-n", bed.rx, "link", "add", extra, "type", "veth", "peer", "name", peer])
    run_ok(["ip", "-n", bed.rx, "link", "set", extra, "up"])
    bed.xdp_ok("load", extra, "--limit", 10)
    run_ok(["ip", "-n", bed.rx, "link", "del", extra])
    assert [s["attached"] for s in bed.limiters()] == [False]

    out = bed.xdp_ok("unload", extra)
    assert "is gone" in out, out
    assert bed.limiters() == []
    r = bed.xdp("unload", extra)
    assert r.returncode == 1 and "No such device" in r.stderr, r


def memory_cgroup(limit_bytes):
    """A memory cgroup limited to @limit_bytes (v2, or v1's memory controller):
    (its folder, the file that takes a pid, the file that sets the limit)."""
    v2 = "/sys/fs/cgroup"
    if os.path.exists(f"{v2}/cgroup.controllers") and \
            "memory" in open(f"{v2}/cgroup.subtree_control").read().split():
        return v2, "cgroup.procs", "memory.max"
    if os.path.isdir(f"{v2}/memory"):
        return f"{v2}/memory", "cgroup.procs", "memory.limit_in_bytes"
    return None


def test_out_of_memory_names_the_map_and_its_option(bed):
    """In a memory cgroup too small for its tables, load names the map that
    could not be made, its size and the option that sizes it, not the program."""
    where = memory_cgroup(150 << 20)
    if not where:
        pytest.skip("no memory cgroup controller to limit a load with")
    parent, procs, limit = where
    cg = os.path.join(parent, f"xdp-rl-e2e-{bed.tag}")
    os.mkdir(cg)
    try:
        with open(os.path.join(cg, limit), "w") as f:
            f.write(str(150 << 20))
        r = run(["sh", "-c", f'echo $$ > {cg}/{procs} && exec "$@"', "sh",
                 *bed.argv("load", bed.rx_if, "--max-sources", "1000000", "--table", bed.table)])
    finally:
        os.rmdir(cg)
    assert r.returncode == 1, r
    assert "the kernel cannot make map '" in r.stderr and "MB" in r.stderr, r
    assert "Cannot allocate memory" in r.stderr, r
    assert "--max-sources 1000000" in r.stderr and "cannot load the XDP program" not in r.stderr, r
    assert bed.xdp_prog_id() is None and bed.limiters() == []
