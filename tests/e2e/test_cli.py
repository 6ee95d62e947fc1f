# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The commands as a user runs them: top, reset, status, stats --watch, a
second load and --force, unload, both namespace styles, help."""
import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

import rlbed
from rlbed import run

COMMANDS = ["load", "set", "unload", "status", "stats", "get", "reset", "top"]


@pytest.mark.both_tables
def test_top_orders_by_count_and_trims(bed):
    limit = 10
    offered = {"198.19.10.1": 40, "198.19.10.2": 30, "198.19.10.3": 20, "198.19.10.4": 5}
    bed.load("--limit", limit, "--window", "60s")
    for src in ["198.19.10.3", "198.19.10.1", "198.19.10.4", "198.19.10.2"]:
        bed.send(src, offered[src])

    top = bed.top()
    assert top["interface"] == bed.rx_if
    assert top["active_sources"] == 4
    want = sorted(offered.items(), key=lambda kv: -kv[1])
    assert [(s["key"], s["count"]) for s in top["sources"]] == \
        [(f"{a}/32", n) for a, n in want], top
    for s in top["sources"]:
        assert s["passed"] == min(s["count"], limit)
        assert s["dropped"] == s["count"] - s["passed"]
        assert 0 < s["expires_in_ms"] <= 60000

    top2 = bed.top("--count", 2)
    assert top2["active_sources"] == 4
    assert [s["key"] for s in top2["sources"]] == [f"{a}/32" for a, _ in want[:2]]

    text = bed.xdp_ok("top", bed.rx_if, "--count", 1)
    lines = text.strip().splitlines()
    assert "4 sources" in lines[0] and len(lines) == 2 and "198.19.10.1/32" in lines[1], text


@pytest.mark.both_tables
@pytest.mark.kernels
def test_reset_address_and_all(bed):
    a, b = "198.19.11.1", "198.19.11.2"
    limit = 10
    bed.nft_counters({a: f"ip saddr {a}", b: f"ip saddr {b}"})
    bed.load("--limit", limit, "--window", "60s")
    bed.send([a, b], 15)
    assert bed.counts()[a] == limit and bed.counts()[b] == limit

    out = bed.xdp_ok("reset", bed.rx_if, a)
    assert "forgot" in out and f"{a}/32" in out
    assert bed.get(a)["count"] == 0
    assert bed.get(b)["count"] == 15, "reset ADDRESS must leave other sources alone"
    bed.send(a, 15)                         # a new window: limit passes again at once
    got = bed.counts()
    assert (got[a], got[b]) == (2 * limit, limit), got
    assert bed.get(a)["count"] == 15

    out = bed.xdp_ok("reset", bed.rx_if, "198.19.11.99")
    assert "no window to forget" in out

    out = bed.xdp_ok("reset", bed.rx_if, "--all")
    assert "forgot 2 windows" in out
    assert bed.top()["active_sources"] == 0
    assert bed.get(a)["count"] == 0 and bed.get(b)["count"] == 0
    bed.send([a, b], 15)
    got = bed.counts()
    assert (got[a], got[b]) == (3 * limit, 2 * limit), got

    before = bed.get(a)
    r = bed.xdp("reset", bed.rx_if)
    assert r.returncode == 2 and r.stderr.startswith("xdp-rl:") and r.stdout == "", r
    assert bed.get(a)["count"] == before["count"]


@pytest.mark.parametrize("first,second", [("n", "exec"), ("exec", "n")],
                         ids=["load-with-n", "load-with-ip-netns-exec"])
def test_both_namespace_styles_see_one_limiter(bed, first, second):
    src = "198.19.12.1"
    bed.load("--limit", 7, "--window", "60s", style=first)
    bed.send(src, 10)

    st = bed.status(style=second)
    assert (st["interface"], st["limit"], st["attached"]) == (bed.rx_if, 7, True), st
    assert st == bed.status(style=first)
    stats = bed.stats(style=second)
    assert (stats["passed"], stats["dropped"]) == (7, 3), stats
    assert bed.get(src, style=second)["count"] == 10

    bed.xdp_ok("set", bed.rx_if, "--limit", 9, style=second)
    assert bed.status(style=first)["limit"] == 9

    r = bed.xdp("load", bed.rx_if, "--limit", 5, style=second)
    assert r.returncode == 1 and "--force" in r.stderr, r

    bed.xdp_ok("unload", bed.rx_if, style=second)
    assert bed.limiters(style=first) == []
    assert bed.xdp_prog_id() is None


@pytest.mark.both_tables
def test_status_json_and_text(bed):
    assert bed.limiters() == []
    out = bed.xdp_ok("status")
    assert "no xdp-rl limiter" in out

    bed.load("--limit", 123, "--window", "1500ms", "--v4-prefix", 30, "--max-sources", 1024)
    for doc in (bed.xdp_json("status", "--json"), bed.xdp_json("status", bed.rx_if, "--json")):
        assert list(doc) == ["limiters"] and len(doc["limiters"]) == 1, doc
        s = doc["limiters"][0]
        assert s["interface"] == bed.rx_if
        assert s["limit"] == 123 and s["unit"] == "packets"
        assert s["window_ns"] == 1_500_000_000 and s["window"] == "1500ms"
        assert s["alignment"] == "per-key"
        assert s["dry_run"] is False and s["attached"] is True
        assert s["mode"] == "native"
        assert (s["v4_prefix"], s["v6_prefix"], s["max_sources"]) == (30, 64, 1024)
        assert s["table"] == bed.table
        assert s["prog_id"] == bed.xdp_prog_id()
        assert abs(s["loaded_at"] - time.time()) < 60
    text = bed.xdp_ok("status", bed.rx_if)
    assert text.startswith(f"{bed.rx_if}: attached, native mode")
    assert "123 packets per 1500ms window" in text
    assert f"; table {bed.table}:" in text, text


def test_stats_json_fields(bed):
    bed.load("--limit", 10, "--window", "60s")
    bed.send("198.19.13.1", 12)
    st = bed.stats()
    fields = ["passed", "dropped", "would_drop", "not_ip", "malformed", "new_windows",
              "table_errors", "passed_bytes", "dropped_bytes"]
    assert st["interface"] == bed.rx_if
    for f in fields:
        assert type(st[f]) is int, (f, st)
    assert (st["passed"], st["dropped"]) == (10, 2)
    assert (st["passed_bytes"], st["dropped_bytes"]) == (640, 128), st
    text = bed.xdp_ok("stats", bed.rx_if)
    assert re.search(r"passed\s+10 packets\s+640 bytes", text), text
    assert re.search(r"dropped\s+2 packets\s+128 bytes", text), text


def test_stats_watch_json_lines(bed):
    bed.load("--limit", 10, "--window", "60s")
    proc = subprocess.Popen(bed.argv("stats", bed.rx_if, "--watch", 1, "--json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        bed.send("198.19.14.1", 12)
        time.sleep(2.2)                      # --watch 1 for ~2.5s: 3 lines
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 0, (proc.returncode, err)
    lines = out.splitlines()
    assert len(lines) >= 2, out
    docs = [json.loads(line) for line in lines]
    for d in docs:
        assert d["interface"] == bed.rx_if and type(d["passed"]) is int
    for d in docs[1:]:
        assert set(d["per_second"]) >= {"passed", "dropped"}, d
    assert docs[-1]["passed"] == 10 and docs[-1]["dropped"] == 2, docs
    # Each line says when it was read: RFC 3339 UTC and Unix ms, a second apart.
    now = time.time() * 1000
    for d in docs:
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", d["time"]), d
        assert now - 10000 < d["time_ms"] <= now, d
    gaps = [b["time_ms"] - a["time_ms"] for a, b in zip(docs, docs[1:])]
    assert all(900 <= g <= 1500 for g in gaps), gaps
    text = bed.xdp_ok("stats", bed.rx_if)
    assert re.match(rf"^{bed.rx_if}: \d{{4}}-\d\d-\d\dT[\d:.]+Z$", text.splitlines()[0]), text


def test_stats_watch_notices_unload(bed):
    """`stats --watch` on a limiter that is unloaded under it must say so and
    exit 1, not go on printing the last totals as if they were live."""
    bed.load("--limit", 10, "--window", "60s")
    proc = subprocess.Popen(bed.argv("stats", bed.rx_if, "--watch", 1, "--json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        assert ready, "stats --watch printed nothing in 10s"
        first = proc.stdout.readline()
        assert json.loads(first)["interface"] == bed.rx_if
        bed.xdp_ok("unload", bed.rx_if)
        still_running = False
        try:
            out, err = proc.communicate(timeout=5)   # a few --watch periods
        except subprocess.TimeoutExpired:
            still_running = True
            os.kill(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=10)
        lines = out.splitlines()
        assert not still_running, (f"stats --watch was still running 5s after unload, and printed "
                                   f"{len(lines)} more lines, the last: {lines[-1:]}")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 1, (proc.returncode, out, err)
    assert err.startswith("xdp-rl:") and bed.rx_if in err, err
    for line in out.splitlines():
        json.loads(line)


def untimed(stats):
    """`stats` without when it was read."""
    return {k: v for k, v in stats.items() if k not in ("time", "time_ms")}


@pytest.mark.both_tables
@pytest.mark.kernels
def test_second_load_fails_and_force_replaces(bed):
    src = "198.19.15.1"
    bed.nft_counters({src: f"ip saddr {src}"})
    bed.load("--limit", 10, "--window", "60s")
    bed.send(src, 4)
    before = bed.status()
    stats_before = bed.stats()

    r = bed.xdp("load", bed.rx_if, "--limit", 50, "--window", "60s")
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and "--force" in r.stderr and bed.rx_if in r.stderr
    assert r.stdout == ""
    assert bed.status() == before, "a failed load must change nothing"
    assert bed.xdp_prog_id() == before["prog_id"]

    out = bed.load("--limit", 50, "--window", "60s", "--force")
    assert f"replaced on {bed.rx_if}" in out
    after = bed.status()
    assert after["limit"] == 50 and after["attached"] is True
    assert after["prog_id"] != before["prog_id"]
    assert after["link_id"] == before["link_id"], "--force swaps the program under the link"
    assert bed.xdp_prog_id() == after["prog_id"]
    # Same table settings: the window and the counters carry over.
    assert bed.get(src)["count"] == 4
    assert untimed(bed.stats()) == untimed(stats_before)
    bed.send(src, 50)                        # count 5..54: 46 pass under the new limit
    assert bed.counts()[src] == 50
    assert bed.get(src)["count"] == 54

    # New table settings (--v4-prefix): the windows start over.
    bed.load("--limit", 50, "--window", "60s", "--v4-prefix", 24, "--force")
    g = bed.get(src)
    assert g["key"] == "198.19.15.0/24" and g["count"] == 0, g
    bed.send(src, 60)
    assert bed.counts()[src] == 100
    assert bed.status()["v4_prefix"] == 24


def test_force_cannot_change_mode(bed):
    bed.load("--limit", 10, "--window", "60s")
    before = bed.status()
    r = bed.xdp("load", bed.rx_if, "--limit", 20, "--mode", "generic", "--force")
    assert r.returncode == 1 and "unload" in r.stderr, r
    assert bed.status() == before


def test_failed_attach_changes_nothing(bed):
    """Native XDP on lo fails with a hint; no state is left behind. Generic
    mode then works beside the veth's limiter, and both show in status."""
    bed.load("--limit", 10, "--window", "60s")
    before = bed.limiters()
    r = bed.xdp("load", "lo", "--limit", 5)
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and "'lo'" in r.stderr and "--mode generic" in r.stderr
    assert r.stdout == ""
    assert bed.limiters() == before
    r = bed.xdp("status", "lo")
    assert r.returncode == 1 and "not loaded" in r.stderr, r

    assert "generic mode" in bed.xdp_ok("load", "lo", "--limit", 5, "--mode", "generic")
    both = {s["interface"]: s for s in bed.limiters()}
    assert set(both) == {"lo", bed.rx_if}
    assert both["lo"]["mode"] == "generic" and both["lo"]["limit"] == 5
    assert both[bed.rx_if] == before[0]
    text = bed.xdp_ok("status")
    assert text.count(": attached,") == 2, text
    bed.xdp_ok("unload", "lo")
    assert bed.limiters() == before


@pytest.mark.both_tables
@pytest.mark.kernels
def test_unload(bed):
    bed.load("--limit", 10, "--window", "60s")
    st = bed.status()
    assert bed.xdp_prog_id() == st["prog_id"]
    ns_ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    pins = f"/sys/fs/bpf/xdp-rl/{ns_ino}/{st['ifindex']}"
    check_pins = rlbed.bpffs_at_sys_fs_bpf()
    if check_pins:
        # A limiter alone pins its link; one in libxdp's dispatcher has none of its own.
        link = ["link"] if st["attach"] == "alone" else []
        assert sorted(os.listdir(pins)) == sorted(
            ["admin", "agg4", "agg6", "bans", "cap_buf", "cap_cpu", "cap_ring", "capture", "charges",
             "config", "drops", "ev_lease", "events", "fleet", "handover", "hot", "hot_key",
             "list_meta", "lists", "locks", "lru", "newsrc", "prog", "remote", "rule_hits",
             "rules4", "rules6", "scratch", "shared", "src4", "src6", "stats"] + link)
        for d in (pins, os.path.dirname(pins), "/sys/fs/bpf/xdp-rl"):
            assert os.stat(d).st_mode & 0o777 == 0o700, f"{d} must be root-only"

    out = bed.xdp_ok("unload", bed.rx_if)
    assert f"unloaded from {bed.rx_if}" in out
    assert bed.xdp_prog_id() is None
    link = run(["ip", "-n", bed.rx, "link", "show", bed.rx_if]).stdout
    assert "xdp" not in link, link
    assert bed.limiters() == []
    if check_pins:
        assert not os.path.exists(pins)
        assert not os.path.exists(os.path.dirname(pins)), \
            "the netns folder goes with its last limiter"

    r = bed.xdp("unload", bed.rx_if)
    assert r.returncode == 1, r
    assert r.stderr.startswith("xdp-rl:") and bed.rx_if in r.stderr and "not loaded" in r.stderr

    # And it can be loaded again.
    bed.load("--limit", 10, "--window", "60s")
    assert bed.status()["attached"] is True


def test_concurrent_loads_one_wins(bed):
    """Loads race for the lock: exactly one attaches, the others see it."""
    procs = [subprocess.Popen(bed.argv("load", bed.rx_if, "--limit", 10 + i, "--window", "60s"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=30)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
    winners = [i for i, r in enumerate(results) if r[0] == 0]
    assert len(winners) == 1, results
    for i, (rc, out, err) in enumerate(results):
        if i != winners[0]:
            assert rc == 1 and "already loaded" in err, (rc, out, err)
    st = bed.status()
    assert st["limit"] == 10 + winners[0] and st["attached"] is True
    assert bed.xdp_prog_id() == st["prog_id"]


def test_defunct_limiter_cleaned_by_next_load(bed):
    """A limiter whose interface went away shows as detached, and the next
    load removes its pins."""
    extra, peer = f"{bed.tag}-c", f"{bed.tag}-d"
    rlbed.run_ok(["ip", "-n", bed.rx, "link", "add", extra, "type", "veth", "peer", "name", peer])
    rlbed.run_ok(["ip", "-n", bed.rx, "link", "set", extra, "up"])
    bed.xdp_ok("load", extra, "--limit", 10, "--window", "60s")
    ifindex = bed.xdp_json("status", extra, "--json")["limiters"][0]["ifindex"]
    rlbed.run_ok(["ip", "-n", bed.rx, "link", "del", extra])

    gone = [s for s in bed.limiters() if s["ifindex"] == ifindex]
    assert len(gone) == 1 and gone[0]["attached"] is False, gone
    # It goes by the name it was loaded on (its index may be another's now).
    assert gone[0]["interface"] == extra, gone
    assert f"{extra}: DETACHED" in bed.xdp_ok("status")

    bed.load("--limit", 10, "--window", "60s")
    assert [s["interface"] for s in bed.limiters()] == [bed.rx_if]


# ---- help: no privileges needed ---------------------------------------------

@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_help(xdp_rl, cmd):
    outs = []
    for argv in ([cmd, "--help"], [cmd, "-h"], ["help", cmd], [cmd, "eth0", "--help"]):
        r = run([xdp_rl, *argv])
        assert r.returncode == 0, (argv, r)
        assert r.stdout.startswith(f"usage: xdp-rl [-n NETNS] {cmd}"), (argv, r.stdout)
        assert r.stderr == ""
        outs.append(r.stdout)
    assert len(set(outs)) == 1


def test_global_help_and_version(xdp_rl):
    for argv in (["help"], ["--help"], ["-h"]):
        r = run([xdp_rl, *argv])
        assert r.returncode == 0 and r.stderr == "", r
        assert r.stdout.startswith("usage: xdp-rl")
        for cmd in COMMANDS:
            assert re.search(rf"^  {cmd}\b", r.stdout, re.M), (cmd, r.stdout)
    r = run([xdp_rl, "--version"])
    assert r.returncode == 0, r
    assert re.match(r"^xdp-rl \d+\.\d+\.\d+ \(libbpf v?\d+\.\d+", r.stdout), r.stdout
    # An unambiguous prefix names its command, as `ip` accepts.
    r = run([xdp_rl, "help", "lo"])
    assert r.returncode == 0 and r.stdout.startswith("usage: xdp-rl [-n NETNS] load"), r
    r = run([xdp_rl])
    assert r.returncode == 2 and r.stdout == "" and "usage: xdp-rl" in r.stderr, r
    r = run([xdp_rl, "-n"])
    assert r.returncode == 2 and r.stdout == "" and "-n" in r.stderr, r
    r = run([xdp_rl, "-n", "somens"])
    assert r.returncode == 2 and r.stdout == "" and "usage: xdp-rl" in r.stderr, r
    r = run([xdp_rl, "help", "bogus"])
    assert r.returncode == 2 and r.stdout == "" and "bogus" in r.stderr, r
    r = run([xdp_rl, "help", "--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: xdp-rl"), r
    r = run([xdp_rl, "help", "load", "extra"])
    assert r.returncode == 2 and r.stdout == "" and "extra" in r.stderr, r


def test_man_synopsis_block_is_xdp_rl_help(xdp_rl):
    """The man page's synopsis block and `xdp-rl help` list the same commands,
    forms and options, line for line: both come from the commands' specs."""
    with open(os.path.join(rlbed.ROOT, "doc", "xdp-rl.8.scd")) as f:
        readme = f.read()
    block = readme.split("\n# SYNOPSIS\n", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    readme_lines = [line for line in block.splitlines() if line.startswith("  ")]
    out = run([xdp_rl, "help"]).stdout
    help_lines = out.split("commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert readme_lines == help_lines
    # And each command's --help names every option its synopsis shows.
    for cmd in sorted({line.split()[0] for line in help_lines if line[2] != " "}):
        usage = run([xdp_rl, cmd, "--help"]).stdout
        synopsis = usage.split("\n\n", 1)[0]
        body = usage.split("\n\n", 1)[1]
        for opt in set(re.findall(r"--[a-z0-9-]+", synopsis)) - {"--help"}:
            assert re.search(rf"^  {opt}\b", body, re.M), (cmd, opt, usage)


def test_rule_list_prints_what_rule_add_takes(bed):
    """Each line of `rule list`, pasted after `rule add IFACE`, makes the same
    rule: the options it takes (--layer, --deny, --shared, the selectors),
    not a description; its hits follow a '#'."""
    bed.load("--limit", 5, "--window", "1h", "--max-layers", 2)
    rules = [["198.19.70.0/24", "--deny"], ["198.19.71.0/24", "--allow", "--proto", "icmp"],
             ["198.19.72.0/24", "--layer", "5/1h", "--layer", "50/1d", "--shared"],
             ["2001:2:0:73::/64", "--layer", "3/1s", "--proto", "tcp", "--dport",
              "80,443-445", "--syn"]]
    for r in rules:
        bed.xdp_ok("rule", "add", bed.rx_if, *r)
    bed.send("198.19.70.1", 2)
    before = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    lines = bed.xdp_ok("rule", "list", bed.rx_if).splitlines()
    assert lines[0].startswith("198.19.70.0/24 --deny") and "# hits 2, dropped 2" in lines[0]
    for line in lines:
        words = line.split("#")[0].split()
        bed.xdp_ok("rule", "del", bed.rx_if, words[0])
        bed.xdp_ok("rule", "add", bed.rx_if, *words)
    after = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("hits", "dropped", "would_drop")}
                        for r in rs]
    assert strip(after) == strip(before)
