# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Helpers for the xdp-rl end-to-end tests.

A Bed is one scripts/testbed.sh pair of namespaces: a sender TAG-tx with veth
TAG-a and a receiver TAG-rx with veth TAG-b, where the limiter runs. Frames
are sent with scripts/sendpkts.py (bounded by --count and --deadline); the
ground truth is an nftables netdev ingress chain on TAG-b, which runs after
XDP and so counts exactly what XDP passed.

Every address used here is in 198.18.0.0/15 or 2001:2::/48. Sources are kept
off the receiver's on-link prefixes (198.18.0.0/24, 2001:2::/64), so the
receiver never answers them (no route back) and the counters only hold the
frames a test sent.
"""
import itertools
import json
import os
import re
import shutil
import subprocess
import time

import pytest

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The build folder under test: make passes its own (build/san with SANITIZE=1).
BUILD = os.environ.get("XDP_RL_BUILD") or os.path.join(ROOT, "build")
BIN = os.path.join(BUILD, "xdp-rl")
TESTBED = os.path.join(ROOT, "scripts", "testbed.sh")
SENDPKTS = os.path.join(ROOT, "scripts", "sendpkts.py")
PY = "/usr/bin/python3"

# The table every limiter of these tests is loaded with (`load --table`),
# unless a test is run on both (conftest.py): `make e2e TABLE=lru`.
TABLE = os.environ.get("XDP_RL_E2E_TABLE") or "buckets"
TABLES = ("buckets", "lru")

CMD_TIMEOUT = 30        # seconds, for any one command
SEND_DEADLINE = 20      # sendpkts --deadline

NEEDED_CAPS = {39: "CAP_BPF", 38: "CAP_PERFMON", 12: "CAP_NET_ADMIN", 21: "CAP_SYS_ADMIN"}

_tags = itertools.count()


def run(argv, timeout=CMD_TIMEOUT, env=None):
    """Run @argv, capture stdout and stderr as text, never raise on exit status."""
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


def run_ok(argv, **kw):
    r = run(argv, **kw)
    assert r.returncode == 0, \
        f"{argv} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def make(*args, timeout=300):
    """`make -s ARGS` in the tree, as a user would run it: not with the
    variables and jobserver of the make that runs the tests."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return run(["make", "-C", ROOT, "--no-print-directory", "-s", *args], timeout=timeout,
               env=env)


def privilege_problem():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "the end-to-end tests need root (namespaces, XDP, nftables)"
    with open("/proc/self/status") as f:
        m = re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M)
    eff = int(m.group(1), 16) if m else 0
    missing = [name for bit, name in NEEDED_CAPS.items() if not eff >> bit & 1]
    if missing:
        return "missing capabilities: " + ", ".join(missing)
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            return f"'{tool}' is not installed"
    return None


def caps_did_not_reach(r):
    """Stop a test whose capable non-root run of xdp-rl (setpriv with ambient
    capabilities) was refused for missing capabilities: the capabilities did
    not reach it here. A skip, saying so; in CI, which has them, a failure."""
    if r.returncode == 1 and "missing capabilities" in r.stderr:
        why = "ambient capabilities did not reach xdp-rl: " + r.stderr.strip()
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def bpffs_at_sys_fs_bpf():
    with open("/proc/self/mounts") as f:
        return any(line.split()[1:3] == ["/sys/fs/bpf", "bpf"] for line in f)


def ns_exists(name):
    return os.path.exists(f"/run/netns/{name}")


def new_tag():
    """A short tag no namespace uses yet: r<pid mod 10000><n>, at most 12 chars."""
    while True:
        tag = f"r{os.getpid() % 10000}{next(_tags)}"
        assert len(tag) <= 12
        if not ns_exists(f"{tag}-rx") and not ns_exists(f"{tag}-tx"):
            return tag


class Bed:
    """A sender/receiver namespace pair. Register down() before start().
    @table: what load() loads the limiter with (`--table`), unless told."""

    def __init__(self, table=None):
        self.tag = new_tag()
        self.made = False
        self.nft_table = None
        self.table = table or TABLE

    def start(self):
        self.made = True  # from here on down() has something to remove
        r = run([TESTBED, "up", self.tag], env=dict(os.environ, XDP_RL=BIN))
        assert r.returncode == 0, f"testbed.sh up {self.tag} failed: {r.stderr}"
        self.rx, self.tx, self.rx_if, self.tx_if, self.rx_mac = r.stdout.split()
        # The sender's own IPv6 chatter (MLD, link-local) would be counted by
        # the limiter; the tests send raw frames and need no stack there.
        run_ok(["ip", "netns", "exec", self.tx, "sysctl", "-qw",
                f"net.ipv6.conf.{self.tx_if}.disable_ipv6=1"])
        return self

    def down(self):
        """Unload xdp-rl and delete both namespaces (testbed.sh down)."""
        if self.made:
            run([TESTBED, "down", self.tag], env=dict(os.environ, XDP_RL=BIN))
            self.made = False
            assert not ns_exists(f"{self.tag}-rx") and not ns_exists(f"{self.tag}-tx"), \
                f"testbed.sh down {self.tag} left a namespace behind"

    # ---- the CLI ---------------------------------------------------------

    def argv(self, *args, style="n"):
        """xdp-rl ARGS in the receiver: style "n" is `-n NS`, "exec" is `ip netns exec`."""
        args = [str(a) for a in args]
        if style == "n":
            return [BIN, "-n", self.rx, *args]
        if style == "exec":
            return ["ip", "netns", "exec", self.rx, BIN, *args]
        raise ValueError(style)

    def xdp(self, *args, style="n"):
        return run(self.argv(*args, style=style))

    def xdp_ok(self, *args, style="n"):
        return run_ok(self.argv(*args, style=style)).stdout

    def xdp_json(self, *args, style="n"):
        out = self.xdp_ok(*args, style=style)
        try:
            return json.loads(out)
        except ValueError as e:
            raise AssertionError(f"xdp-rl {' '.join(map(str, args))}: stdout is not JSON "
                                 f"({e}): {out!r}")

    def load(self, *opts, style="n"):
        opts = [str(o) for o in opts]
        if "--table" not in opts:
            opts += ["--table", self.table]
        return self.xdp_ok("load", self.rx_if, *opts, style=style)

    def status(self, style="n"):
        doc = self.xdp_json("status", self.rx_if, "--json", style=style)
        assert len(doc["limiters"]) == 1, doc
        return doc["limiters"][0]

    def limiters(self, style="n"):
        return self.xdp_json("status", "--json", style=style)["limiters"]

    def stats(self, style="n"):
        return self.xdp_json("stats", self.rx_if, "--json", style=style)

    def get(self, addr, style="n"):
        return self.xdp_json("get", self.rx_if, addr, "--json", style=style)

    def top(self, *opts):
        return self.xdp_json("top", self.rx_if, "--json", *opts)

    def xdp_prog_id(self):
        """The XDP program on the receiver's veth, as `ip link` reports it, or None;
        under libxdp's dispatcher (--attach shared), xdp-rl's among the programs
        it runs, as `xdp-loader status` lists them (a list if there are several)."""
        out = run_ok(["ip", "-n", self.rx, "-j", "link", "show", self.rx_if]).stdout
        prog = json.loads(out)[0].get("xdp", {}).get("prog", {})
        if prog.get("name") != "xdp_dispatcher":
            return prog.get("id")
        out = run_ok(["nsenter", f"--net=/run/netns/{self.rx}", "xdp-loader", "status",
                      self.rx_if]).stdout
        ids = [int(f[3]) for f in (line.split() for line in out.splitlines())
               if f[:1] == ["=>"] and len(f) > 3 and f[2] == "xdp_rl"]
        return ids[0] if len(ids) == 1 else (ids or None)

    # ---- traffic ---------------------------------------------------------

    def send_argv(self, srcs, count, dst=None, vlans=(), size=None, src_range=None, proto=None,
                  dport=None, flags=None, link_local=False, fragment=0, ext=0):
        """The sendpkts command line that sends @count frames from each source
        (UDP to port 9 unless @proto, @dport and TCP @flags say otherwise;
        each datagram as two fragments cut @fragment bytes into the
        transport; IPv6 behind @ext destination options headers)."""
        srcs = [srcs] if isinstance(srcs, str) else list(srcs)
        if dst is None:
            v6 = ":" in (srcs[0] if srcs else src_range)
            dst = "2001:2::2" if v6 else "198.18.0.2"
        argv = ["ip", "netns", "exec", self.tx, PY, SENDPKTS, "--iface", self.tx_if,
                "--dst-mac", self.rx_mac, "--dst", dst, "--count", count,
                "--deadline", SEND_DEADLINE]
        for s in srcs:
            argv += ["--src", s]
        if src_range:
            argv += ["--src-range", src_range]
        for v in vlans:
            argv += ["--vlan", v]
        if size:
            argv += ["--size", size]
        if proto:
            argv += ["--proto", proto]
        if dport:
            argv += ["--dport", dport]
        if flags:
            argv += ["--tcp-flags", flags]
        if link_local:
            argv += ["--link-local"]
        if fragment:
            argv += ["--fragment", fragment]
        if ext:
            argv += ["--ext", ext]
        return [str(a) for a in argv]

    @staticmethod
    def check_sent(out, srcs, count, src_range=None):
        srcs = [srcs] if isinstance(srcs, str) else list(srcs)
        rep = json.loads(out)
        n = len(srcs) + (int(src_range.split("+")[1]) if src_range else 0)
        assert not rep["timed_out"] and rep["sent"] == count * n, rep
        return rep

    def send(self, srcs, count, **kw):
        """Send @count frames from each source; return sendpkts' report."""
        out = run_ok(self.send_argv(srcs, count, **kw), timeout=SEND_DEADLINE + 15).stdout
        return self.check_sent(out, srcs, count, kw.get("src_range"))

    # ---- ground truth: the receiver's stack -------------------------------

    def snmp(self):
        """The receiving stack's own counters (/proc/net/snmp and snmp6 in the
        receiver): {"Tcp.InSegs": n, "Udp.InDatagrams": n, "Udp6.InDatagrams":
        n, ...}. What reached TCP or UDP, after reassembly."""
        out = {}
        text = run_ok(["ip", "netns", "exec", self.rx, "cat", "/proc/net/snmp"]).stdout
        lines = text.splitlines()
        for head, vals in zip(lines[::2], lines[1::2]):
            proto, names = head.split(":", 1)
            for k, v in zip(names.split(), vals.split(":", 1)[1].split()):
                out[f"{proto}.{k}"] = int(v)
        text = run_ok(["ip", "netns", "exec", self.rx, "cat", "/proc/net/snmp6"]).stdout
        for line in text.splitlines():
            k, v = line.split()
            for p in ("Udp6", "Icmp6", "Ip6"):
                if k.startswith(p):
                    out[f"{p}.{k[len(p):]}"] = int(v)
        return out

    # ---- ground truth: nftables in the receiver ----------------------------

    def nft_counters(self, rules, table="e2e"):
        """An ingress chain on the receiver's veth with one counter per rule.

        @rules maps a name to an nft match ("ip saddr 198.19.1.1"); a catch-all
        counter named "all" comes last. Read them with counts().
        """
        lines = [f'\t\t{match} counter comment "{name}"' for name, match in rules.items()]
        lines.append('\t\tcounter comment "all"')
        text = (f"table netdev {table} {{\n\tchain in {{\n"
                f'\t\ttype filter hook ingress device "{self.rx_if}" priority 0\n'
                + "\n".join(lines) + "\n\t}\n}\n")
        r = subprocess.run(["ip", "netns", "exec", self.rx, "nft", "-f", "-"], input=text,
                           capture_output=True, text=True, timeout=CMD_TIMEOUT)
        assert r.returncode == 0, f"nft -f failed: {r.stderr}\n{text}"
        self.nft_table = table

    def counts(self):
        out = run_ok(["ip", "netns", "exec", self.rx, "nft", "-j", "list", "table",
                      "netdev", self.nft_table]).stdout
        got = {}
        for item in json.loads(out)["nftables"]:
            rule = item.get("rule")
            if not rule:
                continue
            for e in rule["expr"]:
                if "counter" in e:
                    got[rule["comment"]] = e["counter"]["packets"]
        return got


def sleep_until(t):
    """Sleep until time.time() reaches @t (wall clock)."""
    while True:
        left = t - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 1.0))
