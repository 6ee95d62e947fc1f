# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Config files: `xdp-rl config` prints a running limiter in the file format,
`xdp-rl apply` makes a limiter match a file (loading it, or changing only what
differs), and a file with an error changes nothing."""
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

import rlbed
from rlbed import run

SRC = "198.19.40.7"       # a source whose window the tests watch


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def hand_tuned(bed):
    """A limiter tuned by hand with every kind of setting and rule."""
    bed.load("--layer", "50/1h", "--layer", "3000/1d", "--aligned", "--v4-prefix", 32,
             "--max-sources", 4096, "--max-layers", 3, "--new-sources", "500/1s",
             "--on-table-full", "aggregate", "--proto", "udp", "--dport", "9,53,8000-8100",
             "--link-local", "prefix")
    for rule in (["198.19.50.0/24", "--allow"],
                 ["198.19.51.0/24", "--deny"],
                 ["2001:2:0:52::/64", "--layer", "10/1s", "--layer", "100/1m",
                  "--layer", "1000/1h"],
                 ["198.19.53.0/24", "--layer", "20/1s", "--shared"],
                 ["198.19.54.0/24", "--layer", "5/1s", "--proto", "tcp", "--dport", "22",
                  "--syn"],
                 ["198.19.55.8/29", "--deny", "--proto", "icmp"]):
        bed.xdp_ok("rule", "add", bed.rx_if, *rule)


def snapshot(bed):
    """What a failed apply must leave alone: settings, rules and a source's window."""
    st = bed.status()
    for k in ("active_sources_v4", "active_sources_v6"):
        st.pop(k)
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    g = bed.get(SRC)
    return st, rules, (g["count"], g.get("rule"), [x["count"] for x in g.get("layers", [])])


def test_config_round_trip(bed, tmp_path):
    hand_tuned(bed)
    text = bed.xdp_ok("config", bed.rx_if)
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert lines[0] == f"interface {bed.rx_if}", text
    # Every setting explicit, the rules sorted as rule list has them.
    for want in ("layer 50/1h", "layer 3000/1d", "aligned", "enforce", "new-sources 500/1s",
                 "on-table-full aggregate", "proto udp", "dport 9,53,8000-8100", "no-syn",
                 "link-local prefix", "v4-prefix 32", "v6-prefix 64", "max-sources 4096",
                 "max-layers 3", f"table {bed.table}", "mode native"):
        assert want in lines, (want, text)
    rules = [x for x in lines if x.startswith("rule ")]
    assert rules == [
        "rule 198.19.50.0/24 --allow",
        "rule 198.19.51.0/24 --deny",
        "rule 198.19.53.0/24 --layer 20/1s --shared",
        "rule 198.19.54.0/24 --layer 5/1s --proto tcp --dport 22 --syn",
        "rule 198.19.55.8/29 --deny --proto icmp",
        "rule 2001:2:0:52::/64 --layer 10/1s --layer 100/1m --layer 1000/1h",
    ], text

    before = snapshot(bed)
    path = write(tmp_path, "printed.conf", text)
    out = bed.xdp_ok("apply", path)
    assert out == f"xdp-rl: {bed.rx_if}: nothing to change\n", out
    assert snapshot(bed) == before
    # And the same through stdin, printed again: the same text.
    assert bed.xdp_ok("config", bed.rx_if) == text
    r = subprocess.run(bed.argv("apply", "-"), input=text, capture_output=True, text=True,
                       timeout=rlbed.CMD_TIMEOUT)
    assert r.returncode == 0 and "nothing to change" in r.stdout, r


def test_apply_loads_when_nothing_is_loaded(bed, tmp_path):
    path = write(tmp_path, f"{bed.rx_if}.conf",
                 "# no interface line: the file's name says it\n"
                 "layer 7/1h\nlayer 100/1d\nmax-sources 1024\n"
                 "rule 198.19.60.0/24 --deny\n")
    out = bed.xdp_ok("apply", path)
    assert out.startswith(f"xdp-rl: loaded on {bed.rx_if} (native mode): 7 packets per 1h "
                          "window and 100 packets per 1d window"), out
    assert "1 rule" in out, out
    st = bed.status()
    assert [(x["limit"], x["window"]) for x in st["layers"]] == [(7, "1h"), (100, "1d")]
    assert st["max_sources"] == 1024
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert [(x["prefix"], x["action"]) for x in rules] == [("198.19.60.0/24", "deny")]
    bed.nft_counters({"src": f"ip saddr {SRC}"})
    bed.send(SRC, 10)
    assert bed.counts()["src"] == 7
    assert bed.xdp_ok("apply", path) == f"xdp-rl: {bed.rx_if}: nothing to change\n"


def test_apply_of_a_limit_keeps_windows(bed, tmp_path):
    bed.load("--limit", 10, "--window", "1h", "--max-sources", 1024)
    bed.nft_counters({"src": f"ip saddr {SRC}"})
    bed.send(SRC, 4)
    assert bed.get(SRC)["count"] == 4
    path = write(tmp_path, "c.conf", f"interface {bed.rx_if}\nlimit 20\nwindow 1h\n"
                                     f"max-sources 1024\ntable {bed.table}\n")
    out = bed.xdp_ok("apply", path)
    assert out == f"xdp-rl: {bed.rx_if}: limit 20 (was limit 10)\n", out
    assert bed.get(SRC)["count"] == 4, "the source's window is kept"
    bed.send(SRC, 30)
    assert bed.counts()["src"] == 20, "the window kept its 4: 16 more pass"


def test_apply_adds_changes_and_deletes_rules(bed, tmp_path):
    bed.load("--limit", 10, "--window", "1h", "--max-sources", 1024)
    for rule in (["198.19.70.0/24", "--deny"], ["198.19.71.0/24", "--layer", "5/1h"],
                 ["198.19.72.0/24", "--layer", "5/1h"], ["198.19.73.0/24", "--allow"]):
        bed.xdp_ok("rule", "add", bed.rx_if, *rule)
    bed.nft_counters({"71": "ip saddr 198.19.71.1", "72": "ip saddr 198.19.72.1"})
    bed.send(["198.19.71.1", "198.19.72.1"], 3)

    def hits():
        return {x["prefix"]: x["hits"]
                for x in bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]}
    assert hits()["198.19.71.0/24"] == 3
    path = write(tmp_path, "c.conf",
                 f"interface {bed.rx_if}\nlimit 10\nwindow 1h\nmax-sources 1024\n"
                 f"table {bed.table}\n"
                 "rule 198.19.71.0/24 --layer 8/1h                # a new limit: in place\n"
                 "rule 198.19.72.0/24 --layer 8/1h --layer 9/1d   # a new shape\n"
                 "rule 198.19.73.0/24 --deny\n"
                 "rule 2001:2:0:74::/64 --allow\n")
    # Its second layers need more room per source: new tables, a replacement.
    out = bed.xdp_ok("apply", path)
    i = bed.rx_if
    assert out.splitlines() == [
        f"xdp-rl: {i}: max-layers 2 (was max-layers 1)",
        f"xdp-rl: {i}: deleted rule 198.19.70.0/24 --deny",
        f"xdp-rl: {i}: changed rule 198.19.71.0/24 --layer 8/1h (was --layer 5/1h)",
        f"xdp-rl: {i}: replaced rule 198.19.72.0/24 --layer 8/1h --layer 9/1d "
        f"(was --layer 5/1h): its sources start afresh",
        f"xdp-rl: {i}: changed rule 198.19.73.0/24 --deny (was --allow)",
        f"xdp-rl: {i}: added rule 2001:2:0:74::/64 --allow",
        f"xdp-rl: {i}: replaced the limiter under its link: every window restarted (its "
        f"source tables changed); the rules it keeps, their counters and budgets were kept",
    ], out
    # A rule kept (changed in place) keeps its counters through the replacement.
    assert hits() == {"198.19.71.0/24": 3, "198.19.72.0/24": 0, "198.19.73.0/24": 0,
                      "2001:2:0:74::/64": 0}
    rules = bed.xdp_json("rule", "list", i, "--json")["rules"]
    assert [(x["prefix"], x["action"], [y["limit"] for y in x["layers"]]) for x in rules] == [
        ("198.19.71.0/24", "limit", [8]), ("198.19.72.0/24", "limit", [8, 9]),
        ("198.19.73.0/24", "deny", []), ("2001:2:0:74::/64", "allow", [])]

    # Live now (the tables stay): a rule's limit changed in place keeps its windows.
    bed.send(["198.19.71.1", "198.19.72.1"], 3)
    assert bed.get("198.19.71.1")["count"] == 3
    text = open(path).read().replace("198.19.71.0/24 --layer 8/1h", "198.19.71.0/24 --layer 4/1h")
    text = text.replace("rule 198.19.73.0/24 --deny\n", "")
    path = write(tmp_path, "d.conf", text)
    out = bed.xdp_ok("apply", path)
    assert out.splitlines() == [
        f"xdp-rl: {i}: changed rule 198.19.71.0/24 --layer 4/1h (was --layer 8/1h)",
        f"xdp-rl: {i}: deleted rule 198.19.73.0/24 --deny"], out
    assert bed.get("198.19.71.1")["count"] == 3, "changed in place: the window is kept"
    before = bed.counts()["71"]
    bed.send("198.19.71.1", 5)
    assert bed.counts()["71"] - before == 1, "4 per hour, 3 used"


BAD_FILES = {
    "unknown setting": ("limit 10\nwindow 1h\nlimt 20\n", 3, "unknown setting 'limt' (did you "
                                                              "mean 'limit'?)"),
    "bad value": ("limit 10\nwindow 1hour\n", 2, "invalid window '1hour': unknown unit"),
    "duplicate rule": ("limit 10\nrule 198.19.80.0/24 --deny\nrule 198.19.81.0/24 --allow\n"
                       "rule 198.19.80.0/24 --allow\n", 4,
                       "a second rule for 198.19.80.0/24 (line 4 has one)"),
    "conflicting settings": ("limit 5\nper-key\nmax-sources 1024\naligned\n", 4,
                             "per-key and aligned exclude each other"),
    "limit and layers": ("layer 5/1s\nlimit 5\n", 2, "give either limit/window or layer"),
    "bad rule": ("limit 5\nrule 198.19.82.1/24 --deny\n", 2,
                 "rule: invalid CIDR '198.19.82.1/24': bits set past /24 (did you mean "
                 "198.19.82.0/24?)"),
    "selector": ("limit 5\nproto icmp\ndport 80\n", 3, "dport goes with proto tcp or udp"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_apply_of_a_bad_file_changes_nothing(bed, tmp_path, kind):
    hand_tuned(bed)
    bed.send(SRC, 3)
    before = snapshot(bed)
    assert before[2][0] == 3
    text, line, why = BAD_FILES[kind]
    # A good change first, so that a partial apply would show.
    path = write(tmp_path, "bad.conf",
                 f"interface {bed.rx_if}\nrule 198.19.90.0/24 --deny\n{text}")
    r = bed.xdp("apply", path)
    assert r.returncode == 2 and r.stdout == "", r
    assert f"{path}:{line + 2}: {why}" in r.stderr, r.stderr
    assert "nothing was changed" in r.stderr
    assert snapshot(bed) == before
    r = bed.xdp("apply", "--check", path)
    assert r.returncode == 2 and f"{path}:{line + 2}: {why}" in r.stderr, r


def test_apply_refused_at_runtime_changes_nothing(bed, tmp_path):
    hand_tuned(bed)
    bed.send(SRC, 3)
    before = snapshot(bed)
    text = bed.xdp_ok("config", bed.rx_if)
    text = text.replace("mode native", "mode generic").replace("layer 50/1h", "layer 60/1h")
    text += "rule 198.19.91.0/24 --deny\n"
    path = write(tmp_path, "generic.conf", text)
    r = bed.xdp("apply", path)
    assert r.returncode == 1 and r.stdout == "", r
    assert "changing mode needs a detach" in r.stderr, r.stderr
    assert snapshot(bed) == before
    # An interface that is not there.
    path = write(tmp_path, "nowhere.conf", "interface xrl-none0\nlimit 5\n")
    r = bed.xdp("apply", path)
    assert r.returncode == 1 and "No such device" in r.stderr, r
    assert snapshot(bed) == before


def test_apply_check(bed, tmp_path):
    good = write(tmp_path, "good.conf",
                 f"interface {bed.rx_if}\nlayer 5000/1s\nlayer 50000/1m\nbytes\n"
                 "rule 198.19.92.0/24 --layer 1000/1s --shared\n")
    out = bed.xdp_ok("apply", "--check", good)
    assert out == (f"xdp-rl: {good}: good: {bed.rx_if} (native mode): 5000 bytes per 1s "
                   "window and 50000 bytes per 1m window, per key, 1 rule\n"
                   f"xdp-rl: {bed.rx_if}: would be: loaded (no limiter runs there)\n"), out
    assert bed.limiters() == [], "--check loads nothing"

    # As root, against a running limiter: what applying it would change, and nothing changed.
    bed.load("--limit", 10, "--window", "1h", "--max-sources", 1024)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.93.0/24", "--deny")
    bed.send(SRC, 3)
    before = snapshot(bed)
    out = bed.xdp_ok("apply", "--check", good)
    assert out.splitlines()[1:] == [
        f"xdp-rl: {bed.rx_if}: would be: layer 5000/1s, layer 50000/1m (was limit 10, "
        "window 1h)",
        f"xdp-rl: {bed.rx_if}: would be: bytes (was no bytes)",
        f"xdp-rl: {bed.rx_if}: would be: max-sources 262144 (was max-sources 1024)",
        f"xdp-rl: {bed.rx_if}: would be: max-layers 2 (was max-layers 1)",
        f"xdp-rl: {bed.rx_if}: would be: added rule 198.19.92.0/24 --layer 1000/1s --shared",
        f"xdp-rl: {bed.rx_if}: would be: deleted rule 198.19.93.0/24 --deny",
        f"xdp-rl: {bed.rx_if}: would be: replaced under its link: every window restarted "
        "(its source tables change)"], out
    assert snapshot(bed) == before, "--check changes nothing"
    # A file that deletes every rule says so before it is applied.
    empty = write(tmp_path, "norules.conf",
                  f"interface {bed.rx_if}\nlimit 10\nwindow 1h\nmax-sources 1024\n"
                  f"table {bed.table}\n")
    out = bed.xdp_ok("apply", "--check", empty)
    assert out.splitlines()[1:] == [
        f"xdp-rl: {bed.rx_if}: would be: deleted rule 198.19.93.0/24 --deny"], out
    r = bed.xdp("apply", empty)
    assert r.returncode == 0, r
    assert f"the file has no rules: it deletes every rule of '{bed.rx_if}' (1)" in r.stderr, r
    # An empty (or truncated to nothing) file is refused.
    r = bed.xdp("apply", write(tmp_path, f"{bed.rx_if}.conf", ""))
    assert r.returncode == 2 and "it has no settings and no rules" in r.stderr, r

    # No privilege, no namespace: reading the file is all it needs.
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) is not installed")
    nobody = pwd.getpwnam("nobody")
    with tempfile.TemporaryDirectory() as public:
        os.chmod(public, 0o755)
        files = {}
        for name, text in (("good.conf", open(good).read()),
                           ("bad.conf", "interface x\nlimit 0\n")):
            files[name] = os.path.join(public, name)
            with open(files[name], "w") as f:
                f.write(text)
            os.chmod(files[name], 0o644)
        argv = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                "--clear-groups", "--inh-caps=-all", rlbed.BIN, "apply", "--check"]
        r = run(argv + [files["good.conf"]])
        assert r.returncode == 0 and "good" in r.stdout, r
        r = run(argv + [files["bad.conf"]])
        assert r.returncode == 2, r
        assert f"{files['bad.conf']}:2: invalid limit '0': must be at least 1" in r.stderr, r
