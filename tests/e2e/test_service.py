# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The systemd units (systemd/*.service.in): systemd-analyze verify finds
nothing to say about them as `make install` writes them, and the command
lines they run do what the units promise on a veth in a namespace, run as
systemd would run them: the unit's specifiers and environment expanded,
its capability bounding set and no_new_privs applied (setpriv), in the
interface's network namespace (nsenter, which leaves /sys/fs/bpf where it
is, as it is for a unit). PID 1 need not be systemd. The rest of a unit's
sandbox (ProtectSystem= and the like) is systemd's and is not run here."""
import os
import re
import select
import shlex
import shutil
import signal
import subprocess

import pytest

import rlbed
from rlbed import run, run_ok

ROOT = rlbed.ROOT
UNITS = os.path.join(ROOT, "systemd")
CAPS = {"CAP_BPF": 39, "CAP_PERFMON": 38, "CAP_SYS_ADMIN": 21, "CAP_NET_ADMIN": 12,
        "CAP_SETPCAP": 8, "CAP_NET_BIND_SERVICE": 10}


def unit(name):
    """{key: [values]} of systemd/NAME.in (sections merged; a unit's keys are unique
    across them here)."""
    keys = {}
    with open(os.path.join(UNITS, name + ".in")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", ";", "[")):
                k, _, v = line.partition("=")
                keys.setdefault(k, []).append(v)
    return keys


def env_file(path):
    """The variables of an EnvironmentFile=, as systemd reads them."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                env[k] = v[1:-1] if len(v) > 1 and v[0] == v[-1] == '"' else v
    return env


def command_line(u, key, iface, env=None, conf_dir=None):
    """Unit @u's @key= line for instance @iface, as systemd would run it: %i
    (escaped), %I, $VAR (split into words) and ${VAR} (one word) expanded, the
    build's binary for @SBINDIR@, and @conf_dir for /etc/xdp-rl."""
    env = env or {}
    escaped = run_ok(["systemd-escape", iface]).stdout.strip() if iface else ""
    words = []
    for w in shlex.split(u[key][0]):
        assert not re.search(r"%[^iI%]", w), f"a specifier the test does not expand: {w}"
        if re.fullmatch(r"\$\w+", w):
            words += env.get(w[1:], "").split()
            continue
        w = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], w)
        w = w.replace("%i", escaped).replace("%I", iface or "").replace("%%", "%")
        w = w.replace("@SBINDIR@", rlbed.BUILD)
        if conf_dir:
            w = w.replace("/etc/xdp-rl/", f"{conf_dir}/")
        words.append(w)
    return words


def bounding_set(u, without=()):
    """setpriv's --bounding-set for the unit's CapabilityBoundingSet=, less @without."""
    caps = [c for c in u["CapabilityBoundingSet"][0].split() if c not in without]
    return "-all" + "".join(f",+{c[4:].lower()}" for c in caps)


def as_unit(bed, u, argv, without=()):
    """@argv in the receiver's namespace with the unit's capabilities and no new privileges."""
    assert u.get("NoNewPrivileges") == ["yes"]
    return ["nsenter", f"--net=/run/netns/{bed.rx}", "--", "setpriv",
            f"--bounding-set={bounding_set(u, without)}", "--inh-caps=-all", "--no-new-privs",
            "--", *argv]


@pytest.fixture(scope="module")
def tools():
    for tool in ("systemd-analyze", "systemd-escape", "setpriv", "nsenter"):
        if not shutil.which(tool):
            pytest.skip(f"'{tool}' is not installed (scripts/deps.sh installs it)")


def test_units_verify(xdp_rl, tools, tmp_path):
    """systemd-analyze verify prints nothing for any unit, as make install
    writes it (the binary's path rewritten into the staging folder, where it
    is: verify checks that it exists)."""
    dest = tmp_path / "dest"
    r = rlbed.make("install", f"DESTDIR={dest}", f"BUILD={rlbed.BUILD}")
    assert r.returncode == 0, r
    unit_dir = dest / "usr/local/lib/systemd/system"
    names = sorted(os.listdir(unit_dir))
    assert names == ["xdp-rl-exporter.service", "xdp-rl-fleet@.service", "xdp-rl@.service"]
    check = tmp_path / "verify"
    check.mkdir()
    for name in names:
        text = (unit_dir / name).read_text()
        assert "/usr/local/sbin/xdp-rl " in text and "@SBINDIR@" not in text, text
        (check / name).write_text(text.replace("/usr/local/sbin/", f"{dest}/usr/local/sbin/"))
    r = run(["systemd-analyze", "verify", "--man=no", *[check / n for n in names]], timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r


def test_limiter_unit_applies_reloads_and_stops(bed, tools, tmp_path):
    """xdp-rl@IFACE: ExecStart loads what IFACE.conf says, ExecReload applies an
    edit (and refuses a bad one, changing nothing), ExecStop unloads; each with
    the unit's three capabilities alone. The interface's name holds a '-', so
    %i (escaped) and %I (the name) differ."""
    u = unit("xdp-rl@.service")
    assert "-" in bed.rx_if
    conf = tmp_path / f"{bed.rx_if}.conf"
    start, reload_, stop = (as_unit(bed, u, command_line(u, k, bed.rx_if, conf_dir=tmp_path))
                            for k in ("ExecStart", "ExecReload", "ExecStop"))
    a, b = "198.19.20.1", "198.18.7.9"
    bed.nft_counters({a: f"ip saddr {a}", b: f"ip saddr {b}"})

    conf.write_text("limit 5\nwindow 60s\nrule 198.18.7.0/24 --allow\n")
    r = run(start)
    assert r.returncode == 0 and f"loaded on {bed.rx_if}" in r.stdout, r
    st = bed.status()
    assert (st["limit"], st["attached"]) == (5, True), st
    bed.send([a, b], 8)
    got = bed.counts()
    assert (got[a], got[b]) == (5, 8), got

    conf.write_text("limit 7\nwindow 60s\nrule 198.18.7.0/24 --deny\n")
    r = run(reload_)
    assert r.returncode == 0, r
    assert "limit 7 (was limit 5)" in r.stdout and "198.18.7.0/24 --deny" in r.stdout, r.stdout
    assert bed.status()["limit"] == 7
    # The window is kept: its count is 8, the limit, the packet that took it
    # over and the 2 dropped after it (a window's first drops are in its count,
    # doc/design.md), so a passes nothing more under limit 7 (a new window
    # would pass 4).
    bed.send([a, b], 4)
    got = bed.counts()
    assert (got[a], got[b]) == (5, 8), got
    r = run(reload_)
    assert r.returncode == 0 and "nothing to change" in r.stdout, r

    conf.write_text("limit 9\nwindow 1hour\n")
    r = run(reload_)
    assert r.returncode == 2 and "nothing was changed" in r.stderr, r
    assert bed.status()["limit"] == 7

    r = run(stop)
    assert r.returncode == 0 and f"unloaded from {bed.rx_if}" in r.stdout, r
    assert bed.limiters() == [] and bed.xdp_prog_id() is None


@pytest.mark.parametrize("cap", unit("xdp-rl@.service")["CapabilityBoundingSet"][0].split())
def test_limiter_unit_needs_each_of_its_capabilities(bed, tools, tmp_path, cap):
    """Without any one of its unit's capabilities, ExecStart fails and loads nothing."""
    u = unit("xdp-rl@.service")
    (tmp_path / f"{bed.rx_if}.conf").write_text("limit 5\n")
    r = run(as_unit(bed, u, command_line(u, "ExecStart", bed.rx_if, conf_dir=tmp_path),
                    without=[cap]))
    assert r.returncode == 1 and r.stderr.startswith("xdp-rl:"), r
    assert bed.limiters() == [] and bed.xdp_prog_id() is None


class UnitExporter:
    """xdp-rl-exporter's ExecStart, with its example options, in the receiver's
    namespace; always stopped by its pid."""

    def __init__(self, bed, without=()):
        u = unit("xdp-rl-exporter.service")
        env = dict(v.split("=", 1) for v in u["Environment"])
        assert u["EnvironmentFile"] == ["-/etc/default/xdp-rl-exporter"]
        env.update(env_file(os.path.join(ROOT, "doc", "examples", "xdp-rl-exporter.default")))
        self.bed = bed
        self.proc = subprocess.Popen(
            as_unit(bed, u, command_line(u, "ExecStart", None, env), without=without),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ready(self):
        r, _, _ = select.select([self.proc.stdout], [], [], 10)
        return "serving" in (self.proc.stdout.readline() if r else "")

    def field(self, name):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return re.search(rf"^{name}:\s*(\S+)", f.read(), re.M).group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, err


def test_exporter_unit_keeps_cap_bpf_alone(bed, tools):
    """xdp-rl-exporter: with the unit's bounding set it starts without a
    warning, ends with CAP_BPF alone everywhere, and serves /metrics."""
    bed.load("--limit", 3, "--window", "60s")
    e = UnitExporter(bed)
    try:
        assert e.ready(), e.stop()
        for f in ("CapEff", "CapPrm", "CapBnd"):
            assert int(e.field(f), 16) == 1 << CAPS["CAP_BPF"], f
        assert e.field("NoNewPrivs") == "1"
        out = run_ok(["ip", "netns", "exec", bed.rx, "curl", "-sS", "--max-time", "10",
                      "http://127.0.0.1:9577/metrics"]).stdout
        assert f'xdp_rl_limit_packets{{interface="{bed.rx_if}",layer="0"}} 3' in out, out
    finally:
        code, err = e.stop()
    assert (code, err) == (0, ""), err


@pytest.mark.parametrize("cap", unit("xdp-rl-exporter.service")["CapabilityBoundingSet"][0].split())
def test_exporter_unit_needs_each_of_its_capabilities(bed, tools, cap):
    """Without any one of them the exporter fails, warns, or keeps more than CAP_BPF."""
    e = UnitExporter(bed, without=[cap])
    try:
        served = e.ready()
        kept = [int(e.field(f), 16) for f in ("CapEff", "CapBnd")] if served else []
    finally:
        code, err = e.stop()
    assert not served or err or kept != [1 << CAPS["CAP_BPF"]] * 2, \
        f"without {cap} the exporter ran as well: {kept} {err!r}"


def test_fleet_unit_runs_the_agent(xdp_rl, bed, tools, tmp_path):
    """xdp-rl-fleet@IFACE: its command line, with the example settings, starts
    the agent on an aligned limiter; with no Redis there, it keeps trying
    (as Restart=on-failure would have it do) until stopped."""
    if "fleet" not in run_ok([xdp_rl, "help"]).stdout:
        pytest.skip("this build has no 'xdp-rl fleet' (issue 14)")
    u = unit("xdp-rl-fleet@.service")
    assert u["EnvironmentFile"] == ["/etc/xdp-rl/fleet-%I.env"]
    assert u["Restart"] == ["on-failure"]
    env = dict(v.split("=", 1) for v in u["Environment"])
    env.update(env_file(os.path.join(ROOT, "doc", "examples", "fleet-eth0.env")))
    env["REDIS"] = "127.0.0.1:9"        # nothing listens there
    bed.load("--limit", 5, "--window", "1s", "--aligned")
    proc = subprocess.Popen(as_unit(bed, u, command_line(u, "ExecStart", bed.rx_if, env)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None, "the agent exited: " + proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0, err
