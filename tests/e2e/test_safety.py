# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""State no other user can touch, files read with the caller's own rights,
and output that stays valid whatever the names.

The tests that plant folders or hold the lock do it in a bpffs of their own:
a private mount namespace (unshare -m) with a fresh bpffs on /sys/fs/bpf,
which xdp-rl finds first, so the machine's real state is never touched.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

import rlbed
from rlbed import BIN, run, run_ok


def snapshot(bed):
    st = bed.status()
    return st["prog_id"], st["limit"], bed.xdp_prog_id()


@pytest.fixture
def limiter(bed):
    bed.load("--limit", 10, "--window", "60s")
    return bed


@pytest.fixture
def nobody_bin():
    """A copy of xdp-rl that user 65534 can run, wherever the repo is."""
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


def as_capable_nobody(path, caps, *args, env=None):
    """Run @path as user 65534 with the capabilities @caps ("+bpf,+net_admin")."""
    return run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                f"--inh-caps={caps}", f"--ambient-caps={caps}", path, *args], env=env)


def in_private_bpffs(script, timeout=30):
    """Run shell @script in a mount namespace of its own, on a fresh bpffs."""
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                "mount -t bpf bpf /sys/fs/bpf\n" + script], timeout=timeout)


# ---- a capable user who is not root ------------------------------------------

def test_failed_load_by_a_capable_user_leaves_roots_limiter(limiter, nobody_bin):
    """A load by another user that fails, for whatever reason, removes
    nothing it did not make: root's limiter keeps running, whole."""
    bed = limiter
    before = snapshot(bed)
    caps = "+bpf,+perfmon,+net_admin,+sys_admin,+dac_override"
    attempts = [
        ["-n", bed.rx, "load", bed.rx_if, "--limit", "5"],                      # already loaded
        ["-n", bed.rx, "load", bed.rx_if, "--force", "--mode", "generic"],      # mode change
        ["-n", bed.rx, "load", bed.rx_if, "--force", "--rules", "/nonexistent"],
        ["-n", bed.rx, "load", bed.rx_if, "--force", "--max-sources", "16", "--limit", "0"],
    ]
    for argv in attempts:
        r = as_capable_nobody(nobody_bin, caps, *argv)
        rlbed.caps_did_not_reach(r)
        assert r.returncode in (1, 2), (argv, r)
        assert snapshot(bed) == before, argv
    # Without CAP_DAC_OVERRIDE it cannot even reach the state: told why.
    r = as_capable_nobody(nobody_bin, "+bpf,+perfmon,+net_admin,+sys_admin", "-n", bed.rx, "load",
                          bed.rx_if, "--force", "--limit", "5")
    assert r.returncode == 1 and "Permission denied" in r.stderr, r
    assert snapshot(bed) == before


def owners(top):
    """{path: uid} of @top and everything under it."""
    out = {top: os.lstat(top).st_uid}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            out[os.path.join(d, n)] = os.lstat(os.path.join(d, n)).st_uid
    return out


def test_state_a_capable_user_makes_is_roots(bed, nobody_bin):
    """A user other than root with the capabilities loads a limiter whose
    folders and pins are root's (CAP_CHOWN gives them to root); without
    CAP_CHOWN the load is refused and leaves nothing; without
    CAP_DAC_OVERRIDE it is told it cannot reach the state, not that it
    cannot create what exists."""
    if not rlbed.bpffs_at_sys_fs_bpf():
        pytest.skip("the test reads the owners of the pins: it needs bpffs at /sys/fs/bpf")
    folder = f"/sys/fs/bpf/xdp-rl/{os.stat(f'/run/netns/{bed.rx}').st_ino}"
    base = "+bpf,+perfmon,+net_admin,+sys_admin"
    r = as_capable_nobody(nobody_bin, base + ",+dac_override", "-n", bed.rx, "load",
                          bed.rx_if, "--limit", "5", "--table", bed.table)
    rlbed.caps_did_not_reach(r)
    assert r.returncode == 1 and "CAP_CHOWN" in r.stderr, r
    assert not os.path.exists(folder) and bed.xdp_prog_id() is None, "refused, nothing left"
    r = as_capable_nobody(nobody_bin, base, "-n", bed.rx, "load", bed.rx_if, "--limit", "5")
    assert r.returncode == 1 and "cannot reach" in r.stderr, r
    assert "cannot create" not in r.stderr, r

    r = as_capable_nobody(nobody_bin, base + ",+dac_override,+chown", "-n", bed.rx, "load",
                          bed.rx_if, "--limit", "5", "--table", bed.table)
    assert r.returncode == 0, r
    try:
        got = owners(folder)
        assert len(got) > 10 and set(got.values()) == {0}, \
            {p: u for p, u in got.items() if u != 0}
        assert bed.status()["limit"] == 5
    finally:
        bed.xdp_ok("unload", bed.rx_if)


def test_rules_file_is_read_with_the_callers_rights(limiter, nobody_bin):
    """A setcap'd xdp-rl must not read for its caller what the caller could not."""
    bed = limiter
    secret = "198.19.77.0/24 --deny  # the-secret-first-line"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "root-only.rules")
        with open(path, "w") as f:
            f.write("this-is-no-rule " + secret + "\n")
        os.chmod(path, 0o600)
        os.chmod(d, 0o755)
        r = as_capable_nobody(nobody_bin, "+bpf,+perfmon,+net_admin,+sys_admin,+dac_override",
                              "-n", bed.rx, "load", bed.rx_if, "--force", "--rules", path)
        rlbed.caps_did_not_reach(r)
        assert r.returncode == 2 and "Permission denied" in r.stderr, r
        assert "secret" not in r.stderr and "this-is-no-rule" not in r.stderr, r
        # Root reads it, and the error quotes only the word it could not parse.
        r = bed.xdp("load", bed.rx_if, "--force", "--rules", path)
        assert r.returncode == 2 and ":1:" in r.stderr, r
        assert "secret" not in r.stderr, r


def test_rules_file_that_is_a_fifo_is_refused_at_once(limiter):
    bed = limiter
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "rules")
        os.mkfifo(fifo)
        t = time.monotonic()
        r = run(bed.argv("load", bed.rx_if, "--force", "--rules", fifo), timeout=10)
        assert r.returncode == 2 and "not a regular file" in r.stderr, r
        assert time.monotonic() - t < 5


# ---- the state folder ----------------------------------------------------------

def test_state_folder_made_by_another_user_is_refused(bed):
    """Someone made /sys/fs/bpf/xdp-rl before root did: xdp-rl will not keep
    state there, says why and how to fix it, and changes nothing."""
    r = in_private_bpffs(f"""
        mkdir /sys/fs/bpf/xdp-rl
        chown 65534:65534 /sys/fs/bpf/xdp-rl
        chmod 0777 /sys/fs/bpf/xdp-rl
        {BIN} -n {bed.rx} load {bed.rx_if} --limit 5 && exit 10
        {BIN} -n {bed.rx} status && exit 11
        ls -A /sys/fs/bpf/xdp-rl | wc -l
    """)
    assert r.returncode == 0, r
    assert "must be root's and mode 0700" in r.stderr and "rm -r" in r.stderr, r
    assert r.stdout.strip().endswith("0"), r
    assert bed.xdp_prog_id() is None


def test_state_folder_that_is_a_symlink_is_refused(bed):
    r = in_private_bpffs(f"""
        mkdir /sys/fs/bpf/elsewhere
        ln -s /sys/fs/bpf/elsewhere /sys/fs/bpf/xdp-rl
        {BIN} -n {bed.rx} load {bed.rx_if} --limit 5 && exit 10
        ls -A /sys/fs/bpf/elsewhere | wc -l
    """)
    assert r.returncode == 0, r
    assert "symlink" in r.stderr, r
    assert r.stdout.strip() == "0", r
    assert bed.xdp_prog_id() is None


def test_bpffs_others_may_write_without_sticky_bit_is_refused(bed):
    r = in_private_bpffs(f"""
        chmod 0777 /sys/fs/bpf
        {BIN} -n {bed.rx} load {bed.rx_if} --limit 5 && exit 10
        exit 0
    """)
    assert r.returncode == 0, r
    assert "sticky" in r.stderr and "mode=0700" in r.stderr, r
    assert bed.xdp_prog_id() is None


def test_a_lock_held_too_long_names_its_holder(bed):
    """A command does not wait for ever on its namespace's lock: it says
    who holds it, and which namespace's it is."""
    ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    r = in_private_bpffs(f"""
        mkdir -m 0700 /sys/fs/bpf/xdp-rl /sys/fs/bpf/xdp-rl/{ino}
        flock /sys/fs/bpf/xdp-rl/{ino} sleep 8 &
        sleep 0.5
        XDP_RL_LOCK_WAIT=2 {BIN} -n {bed.rx} set {bed.rx_if} --limit 5 && exit 10
        kill $! 2>/dev/null || true
        wait
        exit 0
    """, timeout=30)
    assert r.returncode == 0, r
    assert f"waiting for the lock on the limiters of netns {bed.rx}" in r.stderr, r
    assert "held for 2s by pid" in r.stderr and "sleep" in r.stderr, r


# ---- one lock, and one recovery, per namespace -----------------------------------

FAULTS = os.path.join(rlbed.BUILD, "xdp-rl-faults")


def test_namespaces_never_wait_on_or_recover_each_other(bed):
    """Two limiters in two namespaces: a stuck command in one does not hold
    up the other, and what a killed command left half done in one is
    finished by that namespace's next command, not by the other's."""
    if not rlbed.bpffs_at_sys_fs_bpf():
        pytest.skip("the test holds a namespace's lock: it needs bpffs at /sys/fs/bpf")
    other = [BIN, "-n", bed.tx]
    bed.load("--limit", 10)
    run_ok(other + ["load", bed.tx_if, "--limit", "10", "--table", bed.table])
    try:
        folder = f"/sys/fs/bpf/xdp-rl/{os.stat(f'/run/netns/{bed.rx}').st_ino}"
        assert os.path.isdir(folder), folder
        # A command in the receiver's namespace that holds its lock (stuck, say) ...
        holder = subprocess.Popen(["flock", folder, "sleep", "20"])
        try:
            time.sleep(0.5)
            # ... holds up no command in the other namespace, not even a load (which
            # also collects what is gone everywhere: it skips the busy namespace).
            env = dict(os.environ, XDP_RL_LOCK_WAIT="3")
            for argv in (["set", bed.tx_if, "--limit", "7"], ["stats", bed.tx_if],
                         ["load", bed.tx_if, "--limit", "8", "--force", "--table", bed.table],
                         ["rule", "add", bed.tx_if, "198.19.7.0/24", "--deny"]):
                t = time.monotonic()
                r = run(other + argv, env=env)
                assert r.returncode == 0 and "waiting" not in r.stderr, (argv, r)
                assert time.monotonic() - t < 2.5, (argv, "waited on the other namespace")
            # Its own namespace's commands wait, and say whose lock it is.
            r = run([BIN, "-n", bed.rx, "set", bed.rx_if, "--limit", "5"],
                    env=dict(os.environ, XDP_RL_LOCK_WAIT="1"))
            assert r.returncode == 1 and f"the limiters of netns {bed.rx}" in r.stderr, r
        finally:
            holder.kill()
            holder.wait()

        # An unload killed after its commit, in the receiver's namespace.
        trace = run([FAULTS, "-n", bed.rx, "unload", bed.rx_if],
                    env=dict(os.environ, XDP_RL_FAULT_TRACE="1"))
        assert trace.returncode == 0, trace
        points = [line for line in trace.stderr.splitlines() if "fault point" in line]
        at = next(i for i, p in enumerate(points, 1) if "unload: folder renamed" in p)
        bed.load("--limit", 10)
        r = run([FAULTS, "-n", bed.rx, "unload", bed.rx_if],
                env=dict(os.environ, XDP_RL_FAULT_AT=str(at)))
        assert r.returncode == -9, r
        # The other namespace's commands, reads and writes, leave it alone ...
        for argv in (["stats", bed.tx_if], ["set", bed.tx_if, "--limit", "9"],
                     ["load", bed.tx_if, "--limit", "9", "--force", "--table", bed.table]):
            r = run(other + argv)
            assert r.returncode == 0 and "interrupted" not in r.stderr, (argv, r)
        assert any(n.endswith("-del") for n in os.listdir(folder)), os.listdir(folder)
        # ... and its own next command finishes it, naming the interface and the namespace.
        r = bed.xdp("status")
        assert r.returncode == 0, r
        assert (f"finished an unload of '{bed.rx_if}' in netns {bed.rx} "
                f"({folder}/") in r.stderr and "that was interrupted" in r.stderr, r
        assert bed.xdp_prog_id() is None and bed.limiters() == []
        assert not os.path.exists(folder), "the namespace's folder goes with its last limiter"
    finally:
        run(other + ["unload", bed.tx_if])


# ---- interfaces that come and go, and names of any bytes ----------------------

def test_interface_recreated_with_the_same_name_and_index(bed):
    """The old limiter died with its interface; commands on the new one with
    the same name and index say nothing is loaded, and load works."""
    extra, peer = f"{bed.tag}-e", f"{bed.tag}-f"
    run_ok(["ip", "-n", bed.rx, "link", "add", extra, "type", "veth", "peer", "name", peer])
    bed.xdp_ok("load", extra, "--limit", 10)
    ifindex = bed.xdp_json("status", extra, "--json")["limiters"][0]["ifindex"]
    run_ok(["ip", "-n", bed.rx, "link", "del", extra])
    run_ok(["ip", "-n", bed.rx, "link", "add", extra, "index", ifindex, "type", "veth",
            "peer", "name", peer])
    for argv in (["stats", extra], ["set", extra, "--limit", 5], ["rule", "list", extra],
                 ["get", extra, "198.19.1.1"], ["status", extra]):
        r = bed.xdp(*argv)
        assert r.returncode == 1 and "not loaded" in r.stderr, (argv, r)
    bed.xdp_ok("load", extra, "--limit", 7)
    assert bed.xdp_json("status", extra, "--json")["limiters"][0]["limit"] == 7
    bed.xdp_ok("unload", extra)


def test_json_is_valid_utf8_for_any_interface_name(bed):
    name = b"r\xe9\xff" + bed.tag.encode()[-6:]
    peer = f"{bed.tag}-u"
    p = subprocess.run([b"ip", b"-n", bed.rx.encode(), b"link", b"add", name, b"type", b"veth",
                        b"peer", b"name", peer.encode()], capture_output=True, timeout=30)
    if p.returncode:
        pytest.skip(f"cannot make an interface named {name!r}: {p.stderr!r}")
    p = subprocess.run([BIN.encode(), b"-n", bed.rx.encode(), b"load", name, b"--limit", b"5"],
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p
    for args in ([b"status", b"--json"], [b"status", name, b"--json"],
                 [b"stats", name, b"--json"], [b"rule", b"list", name, b"--json"],
                 [b"top", name, b"--json"]):
        p = subprocess.run([BIN.encode(), b"-n", bed.rx.encode(), *args], capture_output=True,
                           timeout=30)
        assert p.returncode == 0, (args, p)
        doc = json.loads(p.stdout.decode("utf-8"))   # strict: raises on invalid UTF-8
        assert doc, args
    subprocess.run([BIN.encode(), b"-n", bed.rx.encode(), b"unload", name], timeout=30)


def test_unknown_option_in_a_bundle_is_named_alone(xdp_rl):
    for argv, word in ((["-xv"], "'-x'"), (["-vx", "status"], "'-x'"),
                       (["load", "-qv", "eth0"], "'-q'")):
        r = run([xdp_rl, *argv])
        assert r.returncode == 2 and word in r.stderr and xdp_rl not in r.stderr, (argv, r)
