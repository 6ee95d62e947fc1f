# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""`xdp-rl metrics` and `xdp-rl exporter`: Prometheus's own checker
(promtool) on the output, its counters against `stats --json` and `rule
list --json` exactly, the textfile collector's file, and the exporter
scraped with a real HTTP client (curl) inside the test's namespace, on the
receiver's own address; and `bpftool map dump` naming every counter.
"""
import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

import rlbed

PROMTOOL = os.environ.get("XDP_RL_PROMTOOL") or os.path.join(rlbed.ROOT, "build", "promtool")
HEADER = os.path.join(rlbed.ROOT, "include", "xdp_rl.h")
PORT = 9577
CAP_BPF = 39

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def stat_metrics():
    """Every counter of XDP_RL_STATS: its name in `stats` and its metric (name, labels)."""
    with open(HEADER) as f:
        text = f.read()
    block = text.split("#define XDP_RL_STATS(X)", 1)[1].split("\n\n", 1)[0]
    out = {}
    for m in re.finditer(r'X\(\s*(\w+),\s*(\w+),\s*"(?:[^"\\]|\\.)*",[\s\\]*"((?:[^"\\]|\\.)*)"\)',
                         block):
        metric = m.group(3).replace('\\"', '"')
        fam, _, labels = metric.partition("{")
        out[m.group(2)] = ("xdp_rl_" + fam + "_total", dict(LABEL.findall(labels.rstrip("}"))))
    assert len(out) >= 16, f"cannot read XDP_RL_STATS from {HEADER}"
    return out


def parse(text):
    """{(name, frozenset(labels)): value} of the samples, and {name: type}."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        key = (m.group(1), frozenset(LABEL.findall(m.group(2) or "")))
        assert key not in samples, f"a sample twice: {line!r}"
        samples[key] = float(m.group(3))
    return samples, types


def value(samples, name, **labels):
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no sample {name}{labels}; have {sorted(k for k in samples if k[0] == name)}"
    return samples[key]


def promtool_check(text):
    """promtool check metrics: any complaint fails the test."""
    if not os.access(PROMTOOL, os.X_OK):
        pytest.fail(f"{PROMTOOL} is missing: run 'scripts/promtool.sh' (make e2e does)")
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
        f"promtool check metrics complains:\n{r.stdout}{r.stderr}\n--- the metrics:\n{text}"


def counters_match(bed, samples):
    """Every counter of `stats --json` is a sample of the metrics, with the same value."""
    stats = bed.stats()
    names = stat_metrics()
    # The fleet agent's counters are stats' "fleet" object, and metrics of their own.
    assert set(names) == set(stats) - {"interface", "time", "time_ms", "fleet"}
    for stat, (name, labels) in names.items():
        got = value(samples, name, interface=bed.rx_if, **labels)
        assert got == stats[stat], (stat, name, labels, got, stats[stat])
    return stats


def load_with_rules(bed):
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 4096, "--max-layers", 2)
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.7.0/24", "--layer", "3/1h", "--layer", "9/1d")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.66.6", "--deny")
    bed.xdp_ok("rule", "add", bed.rx_if, "2001:2:0:100::/56", "--allow")


def send_mix(bed):
    bed.send(["198.19.1.1", "198.19.1.2", "198.19.7.7", "198.19.66.6"], 10)
    bed.send(["2001:2:0:1aa::5", "2001:2:0:2::5"], 8)


def test_metrics_match_stats_and_promtool(bed):
    load_with_rules(bed)
    send_mix(bed)
    text = bed.xdp_ok("metrics")
    promtool_check(text)
    samples, types = parse(text)
    stats = counters_match(bed, samples)
    # What was sent: 5 + 5 of the global limit's, 3 of the /24 rule's, 8 allowed, 5 of the /64's.
    assert (stats["passed"], stats["dropped"], stats["denied"], stats["allowed"]) == \
        (26, 5 + 5 + 7 + 3, 10, 8), stats
    for name, kind in types.items():
        assert name.startswith("xdp_rl_"), name
        assert (kind == "counter") == name.endswith("_total"), (name, kind)
    # Per rule, as `rule list --json` counts them, labelled by prefix.
    rules = bed.xdp_json("rule", "list", bed.rx_if, "--json")["rules"]
    assert len(rules) == 3
    for r in rules:
        for metric, key in (("matched", "hits"), ("dropped", "dropped"),
                            ("would_drop", "would_drop")):
            assert value(samples, f"xdp_rl_rule_{metric}_packets_total", interface=bed.rx_if,
                         rule=r["prefix"]) == r[key], (r, metric)
        assert value(samples, "xdp_rl_rule_info", interface=bed.rx_if, rule=r["prefix"],
                     action=r["action"], shared="false", select="all") == 1
    assert value(samples, "xdp_rl_rule_matched_packets_total", interface=bed.rx_if,
                 rule="198.19.7.0/24") == 10
    assert value(samples, "xdp_rl_rule_limit_packets", interface=bed.rx_if,
                 rule="198.19.7.0/24", layer="1") == 9
    assert value(samples, "xdp_rl_rule_window_seconds", interface=bed.rx_if,
                 rule="198.19.7.0/24", layer="1") == 86400
    # Gauges, as `status --json` has them.
    st = bed.status()
    for fam, key in (("ipv4", "active_sources_v4"), ("ipv6", "active_sources_v6")):
        assert value(samples, "xdp_rl_sources", interface=bed.rx_if, family=fam) == st[key]
        assert value(samples, "xdp_rl_sources_limit", interface=bed.rx_if, family=fam) == 4096
        # The table's slots: twice --max-sources in buckets, --max-sources in the LRU hash.
        assert value(samples, "xdp_rl_sources_capacity", interface=bed.rx_if, family=fam) == \
            st["sources_capacity"] == (4096 if bed.table == "lru" else 8192)
    assert st["active_sources_v4"] == 3 and st["active_sources_v6"] == 1, st
    assert value(samples, "xdp_rl_rules", interface=bed.rx_if, family="ipv4") == 2
    assert value(samples, "xdp_rl_rules", interface=bed.rx_if, family="ipv6") == 1
    assert value(samples, "xdp_rl_limit_packets", interface=bed.rx_if, layer="0") == 5
    assert value(samples, "xdp_rl_window_seconds", interface=bed.rx_if, layer="0") == 3600
    assert value(samples, "xdp_rl_dry_run", interface=bed.rx_if) == 0
    assert value(samples, "xdp_rl_loaded_timestamp_seconds", interface=bed.rx_if) == \
        st["loaded_at"]
    assert value(samples, "xdp_rl_memory_bytes", interface=bed.rx_if) > 0
    assert value(samples, "xdp_rl_limiter_info", interface=bed.rx_if, mode=st["mode"],
                 unit="packets", alignment="per-key", clock=st["clock"], key=st["key"]) == 1
    version = rlbed.run_ok([rlbed.BIN, "--version"]).stdout.split()[1]
    assert [k for k in samples if k[0] == "xdp_rl_build_info"
            and ("version", version) in k[1]], samples
    # No per-source series: no label holds a source address.
    for name, labels in samples:
        for k, v in labels:
            assert not re.search(r"198\.19\.1\.|2001:2:0:(1aa|2)::", v), (name, labels)

    # `metrics IFACE` is that limiter's; an interface with none is an error.
    assert parse(bed.xdp_ok("metrics", bed.rx_if))[0] == samples
    r = bed.xdp("metrics", "lo")
    assert r.returncode == 1 and "not loaded" in r.stderr, r


def test_rule_series_are_optional_and_lists_are_counted(bed, tmp_path):
    """--rule-series none leaves out every per-rule series (thousands of rules
    made tens of thousands of lines) and keeps the totals; the lists are two
    series a family, whatever their size."""
    load_with_rules(bed)
    deny = tmp_path / "deny.netset"
    deny.write_text("".join(f"198.18.{i >> 8}.{i & 255}\n" for i in range(3000)) +
                    "198.19.66.0/24\n2001:2:0:3::/64\n")
    bed.xdp_ok("lists", bed.rx_if, "--deny", str(deny))
    send_mix(bed)
    bed.send("2001:2:0:3::9", 4)
    each = bed.xdp_ok("metrics")
    none = bed.xdp_ok("metrics", "--rule-series", "none")
    for text in (each, none):
        promtool_check(text)
    samples, _ = parse(none)
    assert not [k for k in samples if k[0].startswith("xdp_rl_rule_")], \
        "no per-rule series with --rule-series none"
    assert [k for k in parse(each)[0] if k[0] == "xdp_rl_rule_matched_packets_total"]
    assert value(samples, "xdp_rl_list_prefixes", interface=bed.rx_if, list="deny",
                 family="ipv4") == 3001
    assert value(samples, "xdp_rl_list_prefixes", interface=bed.rx_if, list="deny",
                 family="ipv6") == 1
    # 198.19.66.6 has a /32 --deny rule (longer: the rule), 2001:2:0:3::9 the list.
    assert value(samples, "xdp_rl_list_matched_packets_total", interface=bed.rx_if,
                 list="deny") == 4
    assert value(samples, "xdp_rl_list_dropped_packets_total", interface=bed.rx_if,
                 list="deny") == 4
    stats = bed.stats()
    assert value(samples, "xdp_rl_packets_total", interface=bed.rx_if,
                 verdict="denied") == stats["denied"] == 10 + 4
    assert len(none.splitlines()) < len(each.splitlines())
    r = bed.xdp("metrics", "--rule-series", "some")
    assert r.returncode == 2 and "each or none" in r.stderr, r


@pytest.mark.both_tables
def test_table_fill_is_a_ratio(bed):
    """--max-sources is what the table is sized to hold; it holds at most its
    slots (twice that in buckets), and the metrics divide to a fill of at
    most 1 (sources over capacity), as status says it."""
    bed.load("--limit", 5, "--window", "1h", "--max-sources", 16)
    bed.send([], 1, src_range="198.19.64.0+64")
    st = bed.status()
    cap = 16 if bed.table == "lru" else 32
    assert st["max_sources"] == 16 and st["sources_capacity"] == cap, st
    assert 0 < st["active_sources_v4"] <= cap, st
    if bed.table == "buckets":
        assert st["active_sources_v4"] > 16, "a bucket table keeps up to twice its size"
    samples, _ = parse(bed.xdp_ok("metrics"))
    held = int(value(samples, "xdp_rl_sources", interface=bed.rx_if, family="ipv4"))
    assert held == st["active_sources_v4"]
    assert held / value(samples, "xdp_rl_sources_capacity", interface=bed.rx_if,
                        family="ipv4") <= 1
    text = bed.xdp_ok("status", bed.rx_if)
    pct = round(100 * held / cap)
    assert f"{held} IPv4, 0 IPv6 with an open window (the table {pct}%, 0% full)" in text, text
    if bed.table == "buckets":
        assert "sized for 16 sources per family, holds at most 32 (its slots)" in text, text


def test_metrics_textfile(bed, tmp_path):
    """--output: node_exporter's textfile collector reads a whole file, renamed into place."""
    bed.load("--limit", 3, "--window", "1h", "--max-sources", 1024)
    bed.send(["198.19.2.1"], 5)
    out = tmp_path / "xdp_rl.prom"
    out.write_text("old\n")
    old_ino = out.stat().st_ino
    assert bed.xdp_ok("metrics", "--output", out) == ""
    text = out.read_text()
    promtool_check(text)
    assert out.stat().st_ino != old_ino, "FILE was written in place, not renamed over"
    assert out.stat().st_mode & 0o777 == 0o644, oct(out.stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["xdp_rl.prom"], os.listdir(tmp_path)
    samples = parse(text)[0]
    assert parse(bed.xdp_ok("metrics"))[0] == samples
    stats = counters_match(bed, samples)
    assert stats["passed"] == 3 and stats["dropped"] == 2, stats
    # A folder that cannot take the file: an error, and nothing left behind.
    r = bed.xdp("metrics", "--output", tmp_path / "nosuch" / "x.prom")
    assert r.returncode == 1 and "cannot write the metrics" in r.stderr, r


class Exporter:
    """`xdp-rl -n RX exporter` on the receiver's address, always stopped by its pid."""

    def __init__(self, bed, style="n"):
        self.bed = bed
        self.url = f"http://198.18.0.2:{PORT}"
        self.proc = subprocess.Popen(
            bed.argv("exporter", "--listen", f"198.18.0.2:{PORT}", style=style),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        line = self.proc.stdout.readline() if ready else ""
        assert "serving" in line, \
            f"the exporter did not start: {line!r} {self.proc.poll()} {self.stop()[1]}"

    def get(self, path="/metrics"):
        """curl, from inside the receiver's namespace: (status, content type, body)."""
        r = rlbed.run_ok(["ip", "netns", "exec", self.bed.rx, "curl", "-sS", "--max-time", "10",
                          "-o", "-", "-w", "\n%{http_code} %{content_type}", self.url + path])
        body, _, tail = r.stdout.rpartition("\n")
        code, _, ctype = tail.partition(" ")
        return int(code), ctype, body

    def scrape(self):
        code, ctype, body = self.get()
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4"), (code, ctype)
        return body

    def stop(self):
        """SIGTERM, then SIGKILL if it lingers: its exit code and stderr (once)."""
        if self.proc.stderr.closed:
            return self.proc.returncode, ""
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


@pytest.fixture
def exporter(bed):
    e = Exporter(bed)
    try:
        yield e
    finally:
        e.stop()


def status_field(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return re.search(rf"^{field}:\s*(\S+)", f.read(), re.M).group(1)


def test_exporter(bed, exporter):
    exporter.wait_ready()
    pid = exporter.proc.pid
    # After binding it keeps CAP_BPF alone, can regain nothing, and sees every file read-only.
    for field in ("CapEff", "CapPrm", "CapBnd"):
        assert int(status_field(pid, field), 16) == 1 << CAP_BPF, field
    assert int(status_field(pid, "CapInh"), 16) == 0 and int(status_field(pid, "CapAmb"), 16) == 0
    assert status_field(pid, "NoNewPrivs") == "1"
    assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    with open(f"/proc/{pid}/mountinfo") as f:
        root = [line.split() for line in f if line.split()[4] == "/"][0]
    assert "ro" in root[5].split(","), root

    # No limiter yet: build info only.
    samples = parse(exporter.scrape())[0]
    assert {k[0] for k in samples} == {"xdp_rl_build_info"}, samples
    # Loaded after it started: there on the next scrape, and exactly what stats says.
    load_with_rules(bed)
    send_mix(bed)
    text = exporter.scrape()
    promtool_check(text)
    samples = parse(text)[0]
    counters_match(bed, samples)
    assert parse(bed.xdp_ok("metrics"))[0] == samples
    # It holds no lock: a change goes through while it serves, and shows on the next scrape.
    r = rlbed.run(bed.argv("set", bed.rx_if, "--limit", 6),
                  env=dict(os.environ, XDP_RL_LOCK_WAIT="2"))
    assert r.returncode == 0, r.stderr
    samples = parse(exporter.scrape())[0]
    assert value(samples, "xdp_rl_limit_packets", interface=bed.rx_if, layer="0") == 6
    bed.send(["198.19.1.1"], 4)
    counters_match(bed, parse(exporter.scrape())[0])

    # Only /metrics, only GET and HEAD.
    for path in ("/", "/metrics/x", "/index.html"):
        code, _, body = exporter.get(path)
        assert code == 404 and "/metrics" in body, (path, code, body)
    r = rlbed.run_ok(["ip", "netns", "exec", bed.rx, "curl", "-sS", "-o", "/dev/null",
                      "-w", "%{http_code}", "-X", "POST", exporter.url + "/metrics"])
    assert r.stdout == "405", r.stdout

    # Unloaded: gone from the next scrape.
    bed.xdp_ok("unload", bed.rx_if)
    samples = parse(exporter.scrape())[0]
    assert {k[0] for k in samples} == {"xdp_rl_build_info"}, samples

    code, err = exporter.stop()
    assert code == 0, f"the exporter exited {code} on SIGTERM: {err}"


def test_exporter_ip_netns_exec(bed):
    """Started by `ip netns exec` (which hides /sys/fs/bpf), it finds the pinned state too."""
    bed.load("--limit", 4, "--window", "1h", "--max-sources", 1024)
    e = Exporter(bed, style="exec")
    try:
        e.wait_ready()
        assert int(status_field(e.proc.pid, "CapEff"), 16) == 1 << CAP_BPF
        bed.send(["198.19.4.1"], 6)
        text = e.scrape()
        promtool_check(text)
        stats = counters_match(bed, parse(text)[0])
        assert stats["passed"] == 4 and stats["dropped"] == 2, stats
    finally:
        code, err = e.stop()
    assert code == 0 and "warning" not in err, (code, err)


def test_exporter_refuses(bed):
    """A bad --listen is a usage error; an address the namespace lacks, a runtime one."""
    r = bed.xdp("exporter", "--listen", "198.18.0.2")
    assert r.returncode == 2 and "ADDR:PORT" in r.stderr, r
    r = bed.xdp("exporter", "--listen", "::1:9577")
    assert r.returncode == 2 and "brackets" in r.stderr, r
    r = bed.xdp("exporter", "--listen", "198.18.0.2:0")
    assert r.returncode == 2, r
    r = bed.xdp("exporter", "--listen", "198.18.9.9:9577")
    assert r.returncode == 1 and "cannot listen on 198.18.9.9:9577" in r.stderr, r


def test_bpftool_names_counters(bed):
    """`bpftool map dump` of the pinned stats and config maps shows named fields."""
    bed.load("--limit", 4, "--window", "1h", "--max-sources", 1024)
    bed.send(["198.19.3.1"], 6)
    ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    mine = [l for l in bed.xdp_json("status", "--all", "--json")["limiters"]
            if l["netns"] == ino]
    assert len(mine) == 1, mine
    folder = mine[0]["folder"]
    stats = bed.stats()
    out = rlbed.run_ok(["bpftool", "-j", "map", "dump", "pinned", f"{folder}/stats"]).stdout
    per_cpu = json.loads(out)[0]["formatted"]["values"]

    def named(v):
        """The struct of named counters in a value, through the anonymous union."""
        if isinstance(v, dict):
            if "passed" in v:
                return v
            for x in v.values():
                found = named(x)
                if found:
                    return found
        return None

    for stat in stat_metrics():
        assert sum(named(c["value"])[stat] for c in per_cpu) == stats[stat], stat
    text = rlbed.run_ok(["bpftool", "map", "dump", "pinned", f"{folder}/stats"]).stdout
    assert '"dropped": ' in text and '"new_windows": ' in text, text[:2000]
    out = rlbed.run_ok(["bpftool", "-j", "map", "dump", "pinned", f"{folder}/config"]).stdout
    cfg = json.loads(out)[0]["formatted"]["value"]
    assert cfg["fixed"]["max_sources"] == 1024
    # A window's layer: no burst, so none of a rate's fields (bpf/rate.h).
    assert cfg["slot"][cfg["active"]]["layer"][0] == {
        "limit": 4, "window_ns": 3600 * 10**9, "burst": 0, "per_fp": 0, "tau_ns": 0}
