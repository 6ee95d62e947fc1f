# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Every state change killed at every step: the limiter is left as it was or
as asked, never half, and every later command works.

build/xdp-rl-faults is xdp-rl with its kill points live (user/lib/fault.h): with
XDP_RL_FAULT_AT=N it kills itself with SIGKILL at the Nth step of a change
it reaches. For each change below the test counts its steps, then for each
step: puts the limiter back in its "before" state with the real binary, runs
the change killed at that step, and checks

  - that the next command (status, which first finishes or undoes what the
    killed one left) shows either the "before" or the "after" state, whole:
    the settings, the rules, and the program `ip link` says is attached;
  - that the datapath does what that state says: a fresh source passes
    exactly the limit shown, a prefix listed as denied passes nothing and
    one not listed passes;
  - that the next commands work: rule list, set, unload.

An apply is checked the same way: killed at any step, the next command
finishes it from its journal (user/apply.c), so the limiter is the file's
or, killed before the journal was written, as it was.

CI runs a sample of the steps of each change (always the first and last
few, where the commits are); `make crash-test` runs every step
(XDP_RL_CRASH_ALL=1).
"""
import json
import os
import random
import signal
import tempfile

import pytest

import rlbed
from rlbed import run

FAULTS = os.path.join(rlbed.BUILD, "xdp-rl-faults")
ALL = os.environ.get("XDP_RL_CRASH_ALL") == "1"
SAMPLE = 9      # kill points per change in a bounded run

DENY_OLD = "198.19.8.0/24"
DENY_NEW = "198.19.9.0/24"


def saddr(s):
    return f"ip saddr {s}"


class Crash:
    """One bed, the change under test, and a fresh source for every check."""

    def __init__(self, bed, tmp):
        self.bed = bed
        self.tmp = tmp
        self.n = 0
        rules = os.path.join(tmp, "new.rules")
        with open(rules, "w") as f:
            f.write(f"{DENY_NEW} --deny\n")
        self.rules = rules
        bed.nft_counters({"old": saddr(DENY_OLD), "new": saddr(DENY_NEW),
                          "probe": "ip saddr 198.19.128.0/17"})

    def config(self, name, limit, rules, max_sources=1024):
        """A config file for the limiter in the form reset() loads it, as @name."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(f"interface {self.bed.rx_if}\nlimit {limit}\nwindow 1h\n"
                    f"max-sources {max_sources}\n")
            for prefix, action in rules:
                f.write(f"rule {prefix} --{action}\n")
        return path

    def faults_argv(self, *args):
        return [FAULTS, "-n", self.bed.rx, *[str(a) for a in args]]

    def run_faults(self, args, at=None, trace=False):
        env = dict(os.environ)
        if at is not None:
            env["XDP_RL_FAULT_AT"] = str(at)
        if trace:
            env["XDP_RL_FAULT_TRACE"] = "1"
        return run(self.faults_argv(*args), env=env)

    def steps(self, args):
        """How many kill points the change passes when it runs to the end."""
        r = self.run_faults(args, trace=True)
        assert r.returncode == 0, r
        return [line for line in r.stderr.splitlines() if "fault point" in line]

    # ---- states ---------------------------------------------------------

    def state(self):
        """What the limiter is, as the commands show it (None: not loaded)."""
        bed = self.bed
        r = bed.xdp("status", bed.rx_if, "--json")
        if r.returncode != 0:
            assert "not loaded" in r.stderr, r
            assert bed.xdp_prog_id() is None, "a program is attached, but status says none"
            return None
        st = json.loads(r.stdout)["limiters"][0]
        assert st["attached"] is True, st
        if st["attach"] == "shared":
            # Under libxdp's dispatcher (the kernel matrix): one program of
            # xdp-rl's in it, the limiter's; none a killed change left there.
            ours = [p["id"] for p in st["programs"] if p["name"] == "xdp_rl"]
            assert ours == [st["prog_id"]], st
        else:
            assert bed.xdp_prog_id() == st["prog_id"], \
                f"ip link runs program {bed.xdp_prog_id()}, status says {st['prog_id']}"
        rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
        return {"limit": st["limit"], "max_sources": st["max_sources"],
                "rules": sorted((x["prefix"], x["action"]) for x in rules)}

    def datapath_does(self, state):
        """Frames show the datapath enforces @state."""
        bed = self.bed
        before = bed.counts()
        self.n += 1
        probe = f"198.19.{128 + self.n // 250}.{1 + self.n % 250}"
        old, new = f"198.19.8.{self.n % 250 + 1}", f"198.19.9.{self.n % 250 + 1}"
        bed.send([probe], 12)
        bed.send([old, new], 3)
        got = {k: bed.counts()[k] - before[k] for k in ("probe", "old", "new")}
        if state is None:
            assert got == {"probe": 12, "old": 3, "new": 3}, got
            return
        assert got["probe"] == min(12, state["limit"]), (got, state)
        denied = {p for p, a in state["rules"] if a == "deny"}
        assert got["old"] == (0 if DENY_OLD in denied else 3), (got, state)
        assert got["new"] == (0 if DENY_NEW in denied else 3), (got, state)

    def reset(self, before):
        """Put the limiter in state @before with the real binary."""
        bed = self.bed
        if self.state() is not None:
            bed.xdp_ok("unload", bed.rx_if)
        if before is None:
            return
        bed.load("--limit", before["limit"], "--window", "1h",
                 "--max-sources", before["max_sources"])
        for prefix, action in before["rules"]:
            bed.xdp_ok("rule", "add", bed.rx_if, prefix, f"--{action}")
        assert self.state() == before

    # ---- the test ---------------------------------------------------------

    def check(self, args, before, after):
        self.reset(before)
        points = self.steps(args)
        assert points, "the change passed no kill point"
        assert self.state() == after
        n = len(points)
        picks = list(range(1, n + 1))
        if not ALL and n > SAMPLE:
            edge = list(range(1, 3)) + list(range(n - 3, n + 1))
            rest = [k for k in picks if k not in edge]
            picks = sorted(edge + random.Random(n).sample(rest, SAMPLE - len(edge)))
        seen = set()
        for k in picks:
            self.reset(before)
            r = self.run_faults(args, at=k)
            assert r.returncode == -signal.SIGKILL, (k, points[k - 1], r)
            got = self.state()
            assert got in (before, after), \
                f"killed at {points[k - 1]}: the limiter is {got}, neither {before} nor {after}"
            seen.add("before" if got == before else "after")
            self.datapath_does(got)
            if got is not None:
                # The next commands work.
                self.bed.xdp_ok("set", self.bed.rx_if, "--limit", got["limit"])
                assert self.state() == got
        return seen


def base(limit=5, rules=((DENY_OLD, "deny"),), max_sources=1024):
    return {"limit": limit, "max_sources": max_sources, "rules": sorted(rules)}


@pytest.fixture
def crash(bed):
    if not os.access(FAULTS, os.X_OK):
        pytest.fail(f"{FAULTS} is missing: run 'make'")
    with tempfile.TemporaryDirectory() as tmp:
        yield Crash(bed, tmp)


# Also in the kernel matrix: there, under libxdp's dispatcher (--attach auto).
@pytest.mark.kernels
@pytest.mark.kernels_one_table
def test_load_killed_at_every_step(crash):
    args = ["load", crash.bed.rx_if, "--limit", 7, "--window", "1h", "--max-sources", 1024]
    seen = crash.check(args, None, base(7, rules=()))
    assert seen == {"before", "after"}, seen


# Also in the kernel matrix: there, under libxdp's dispatcher (--attach auto).
@pytest.mark.kernels
@pytest.mark.kernels_one_table
def test_load_force_with_new_rules_killed_at_every_step(crash):
    args = ["load", crash.bed.rx_if, "--force", "--limit", 7, "--window", "1h",
            "--max-sources", 1024, "--rules", crash.rules]
    seen = crash.check(args, base(), base(7, rules=((DENY_NEW, "deny"),)))
    assert seen == {"before", "after"}, seen


def test_load_force_with_a_new_table_killed_at_every_step(crash):
    args = ["load", crash.bed.rx_if, "--force", "--limit", 6, "--window", "1h",
            "--max-sources", 2048]
    seen = crash.check(args, base(), base(6, max_sources=2048))
    assert seen == {"before", "after"}, seen


def test_set_killed_at_every_step(crash):
    args = ["set", crash.bed.rx_if, "--limit", 9]
    seen = crash.check(args, base(), base(9))
    assert seen == {"before", "after"}, seen


def test_rule_add_killed_at_every_step(crash):
    args = ["rule", "add", crash.bed.rx_if, DENY_NEW, "--deny"]
    seen = crash.check(args, base(), base(rules=((DENY_OLD, "deny"), (DENY_NEW, "deny"))))
    assert seen == {"before", "after"}, seen


def test_rule_del_killed_at_every_step(crash):
    args = ["rule", "del", crash.bed.rx_if, DENY_OLD]
    seen = crash.check(args, base(), base(rules=()))
    # Its first step is its commit: the rule is deleted, and the rest tidies up.
    assert seen == {"after"}, seen


def test_unload_killed_at_every_step(crash):
    args = ["unload", crash.bed.rx_if]
    seen = crash.check(args, base(), None)
    # Its first step is its commit: the folder renamed away.
    assert seen == {"after"}, seen


def test_apply_killed_at_every_step(crash):
    # A new limit, a rule deleted and one added: a publish and rule changes.
    path = crash.config("new.conf", 9, [(DENY_NEW, "deny")])
    seen = crash.check(["apply", path], base(), base(9, rules=((DENY_NEW, "deny"),)))
    assert seen == {"before", "after"}, seen


def test_apply_with_a_new_table_killed_at_every_step(crash):
    # New tables: a replacement, with new rules.
    path = crash.config("table.conf", 6, [(DENY_NEW, "deny")], max_sources=2048)
    seen = crash.check(["apply", path], base(),
                       base(6, rules=((DENY_NEW, "deny"),), max_sources=2048))
    assert seen == {"before", "after"}, seen


def test_apply_that_loads_killed_at_every_step(crash):
    path = crash.config("load.conf", 7, [(DENY_OLD, "deny")])
    seen = crash.check(["apply", path], None, base(7))
    assert seen == {"before", "after"}, seen


def test_apply_killed_after_its_journal_is_finished_by_the_next_command(crash):
    path = crash.config("new.conf", 9, [(DENY_NEW, "deny")])
    after = base(9, rules=((DENY_NEW, "deny"),))
    crash.reset(base())
    points = crash.steps(["apply", path])
    k = next(i for i, p in enumerate(points, 1) if "journal: committed" in p)
    crash.reset(base())
    r = crash.run_faults(["apply", path], at=k + 1)   # the journal's written, nothing else
    assert r.returncode == -signal.SIGKILL, r
    bed = crash.bed
    r = bed.xdp("rule", "list", bed.rx_if)
    assert r.returncode == 0, r
    assert "finished an apply that was interrupted" in r.stderr, r.stderr
    assert crash.state() == after
    r = bed.xdp("status", bed.rx_if)
    assert r.returncode == 0 and r.stderr == "", "the journal went with it"
