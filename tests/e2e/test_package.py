# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Installing: `make install` under PREFIX in DESTDIR and `make uninstall`,
which leaves nothing behind; `make deb`, a Debian package that lintian
finds nothing to say about, with the files install puts there, installed
into a scratch root with dpkg and purged again. This machine's own
packages and systemd are never touched: dpkg works in the scratch root,
and systemctl, which a maintainer script calls on a systemd host, is a
stand-in that records what it was asked."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

import rlbed
from rlbed import make, run, run_ok

ROOT = rlbed.ROOT

# What an install puts there, under PREFIX (units: under UNITDIR).
FILES = {
    "sbin/xdp-rl",
    "share/man/man8/xdp-rl.8",
    "share/man/man5/xdp-rl.conf.5",
    "share/bash-completion/completions/xdp-rl",
    "share/doc/xdp-rl/examples/eth0.conf",
    "share/doc/xdp-rl/examples/fleet-eth0.env",
    "share/doc/xdp-rl/examples/xdp-rl-exporter.default",
}
UNIT_FILES = {"xdp-rl@.service", "xdp-rl-exporter.service", "xdp-rl-fleet@.service"}


def files_under(top):
    """Every file and symlink under @top, relative to it."""
    found = set()
    for d, _, names in os.walk(top):
        for n in names:
            found.add(os.path.relpath(os.path.join(d, n), top))
    return found


@pytest.mark.parametrize("prefix,unitdir", [(None, None), ("/usr", "/lib/systemd/system")],
                         ids=["default", "usr"])
def test_install_and_uninstall(xdp_rl, tmp_path, prefix, unitdir):
    dest = tmp_path / "dest"
    args = [f"DESTDIR={dest}"] + ([f"PREFIX={prefix}"] if prefix else []) + \
        ([f"UNITDIR={unitdir}"] if unitdir else [])
    prefix = prefix or "/usr/local"
    unitdir = unitdir or f"{prefix}/lib/systemd/system"
    r = make("install", f"BUILD={rlbed.BUILD}", *args)
    assert r.returncode == 0, r
    want = {f"{prefix}/{f}"[1:] for f in FILES} | {f"{unitdir}/{u}"[1:] for u in UNIT_FILES}
    assert files_under(dest) == want
    sbin = dest / prefix[1:] / "sbin" / "xdp-rl"
    assert os.access(sbin, os.X_OK) and (sbin.stat().st_mode & 0o777) == 0o755
    assert run_ok([sbin, "--version"]).stdout == run_ok([xdp_rl, "--version"]).stdout
    for u in UNIT_FILES:
        text = (dest / unitdir[1:] / u).read_text()
        assert f"ExecStart={prefix}/sbin/xdp-rl " in text and "@" + "SBINDIR@" not in text, u
    r = make("uninstall", f"BUILD={rlbed.BUILD}", *args)
    assert r.returncode == 0, r
    assert files_under(dest) == set(), "make uninstall left these"


def build_pkgs():
    """scripts/deps.sh's BUILD_PKGS."""
    with open(os.path.join(ROOT, "scripts", "deps.sh")) as f:
        return re.search(r"^BUILD_PKGS=\((.*?)\)", f.read(), re.M | re.S).group(1).split()


def test_build_depends_are_the_build_packages():
    """debian/control's Build-Depends: what scripts/deps.sh says a build needs,
    but what build-essential brings."""
    with open(os.path.join(ROOT, "debian", "control")) as f:
        m = re.search(r"^Build-Depends:(.*?)\n(?=\S)", f.read(), re.M | re.S)
    declared = {re.match(r"\s*([\w.+-]+)", d).group(1) for d in m.group(1).split(",") if d.strip()}
    essential = {"make", "gcc", "libc6-dev"}
    missing = set(build_pkgs()) - essential - declared
    assert not missing, f"debian/control's Build-Depends lacks {sorted(missing)} (scripts/deps.sh)"


@pytest.fixture(scope="module")
def deb():
    """make deb, once: the package and the .changes beside it."""
    for tool in ("dpkg-buildpackage", "dh", "lintian"):
        if not shutil.which(tool):
            pytest.skip(f"'{tool}' is not installed (scripts/deps.sh installs it)")
    r = make("deb", timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    arch = run_ok(["dpkg", "--print-architecture"]).stdout.strip()
    version = re.search(r"^VERSION\s*:?=\s*(\S+)",
                        open(os.path.join(ROOT, "Makefile")).read(), re.M).group(1)
    path = os.path.join(ROOT, "build", f"xdp-rl_{version}_{arch}.deb")
    changes = os.path.join(ROOT, "build", "deb", f"xdp-rl_{version}_{arch}.changes")
    assert os.path.exists(path) and os.path.exists(changes), r.stdout
    return path, changes


def test_deb_is_lintian_clean(deb):
    """Nothing at all, pedantic and experimental tags included; the two tags
    overridden in debian/xdp-rl.lintian-overrides say why there.

    Lintian says it should not run as root: as root it runs as nobody, on a
    copy of the .changes and the files it names in a folder of /tmp that
    nobody may enter, from there: the clone may be where only root can go
    (root's home, a mktemp -d folder)."""
    work = tempfile.mkdtemp(prefix="xdp-rl-lintian-")
    try:
        os.chmod(work, 0o755)
        home = os.path.join(work, "home")
        os.mkdir(home)
        os.chmod(home, 0o777)
        src = os.path.dirname(deb[1])
        with open(deb[1]) as f:
            names = set(re.findall(r"^ \S+ \d+ (?:\S+ \S+ )?(\S+)$", f.read(), re.M))
        for name in names | {os.path.basename(deb[1])}:
            shutil.copy(os.path.join(src, name), work)
            os.chmod(os.path.join(work, name), 0o644)
        argv = ["lintian", "--pedantic", "--display-experimental", "-I", "-E",
                "--fail-on", "error,warning,info,pedantic,experimental",
                os.path.basename(deb[1])]
        if os.geteuid() == 0 and shutil.which("setpriv"):
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env",
                    f"HOME={home}", f"TMPDIR={home}", *argv]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=work)
        assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_deb_contents(deb):
    """The files make install puts under /usr (units in /lib/systemd/system, as
    bookworm has them), the man page compressed, Debian's copyright and
    changelog, and lintian's overrides; the libraries it needs in Depends."""
    out = run_ok(["dpkg-deb", "-c", deb[0]]).stdout
    files = {line.split()[-1][2:] for line in out.splitlines() if not line.startswith("d")}
    want = {f"usr/{f}" for f in FILES} | {f"lib/systemd/system/{u}" for u in UNIT_FILES}
    want = {f + ".gz" if f.endswith((".8", ".5")) else f for f in want}
    want |= {"usr/share/doc/xdp-rl/copyright", "usr/share/doc/xdp-rl/changelog.gz",
             "usr/share/lintian/overrides/xdp-rl"}
    assert files == want, out
    assert re.search(r"^-rwxr-xr-x root/root .* \./usr/sbin/xdp-rl$", out, re.M), out
    depends = run_ok(["dpkg-deb", "-f", deb[0], "Depends"]).stdout
    for lib in ("libbpf1", "libcap2", "libmicrohttpd12", "libc6"):
        assert re.search(rf"\b{lib}\b", depends), depends


def test_deb_installs_and_purges(deb, tmp_path):
    """dpkg installs it into a scratch root and purges it, leaving only dpkg's
    own database there; the installed binary and man page work. Maintainer
    scripts run outside a chroot (DPKG_ROOT), with systemctl and
    deb-systemd-invoke replaced by stand-ins."""
    host_before = run(["dpkg-query", "-W", "-f=${Status}", "xdp-rl"]).stdout
    root, stubs = tmp_path / "root", tmp_path / "stubs"
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates"):
        (root / d).mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("")
    stubs.mkdir()
    for cmd in ("systemctl", "deb-systemd-invoke"):
        (stubs / cmd).write_text(f'#!/bin/sh\necho "{cmd} $*" >> "{tmp_path}/calls"\n')
        (stubs / cmd).chmod(0o755)
    env = dict(os.environ, PATH=f"{stubs}:{os.environ.get('PATH', '/usr/sbin:/usr/bin')}")
    dpkg = ["dpkg", f"--root={root}", "--force-script-chrootless", "--force-depends",
            "--path-include=*"]
    try:
        r = run([*dpkg, "-i", deb[0]], env=env, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        installed = files_under(root)
        for f in ("usr/sbin/xdp-rl", "usr/share/man/man8/xdp-rl.8.gz",
                  "usr/share/man/man5/xdp-rl.conf.5.gz",
                  "lib/systemd/system/xdp-rl@.service"):
            assert f in installed, sorted(installed)
        out = run_ok([root / "usr/sbin/xdp-rl", "--version"]).stdout
        assert out.startswith("xdp-rl "), out
        page = run(["man", "-l", root / "usr/share/man/man8/xdp-rl.8.gz"],
                   env=dict(os.environ, MANWIDTH="80"))
        assert page.returncode == 0 and "xdp-rl(8)" in page.stdout, page
        r = run([*dpkg, "--purge", "xdp-rl"], env=env, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        left = {f for f in files_under(root) if not f.startswith("var/lib/dpkg/")}
        assert left == set(), f"left behind by a purge: {sorted(left)}"
    finally:
        if (root / "var/lib/dpkg/info/xdp-rl.list").exists():
            run([*dpkg, "--purge", "xdp-rl"], env=env, timeout=120)
    # The stand-ins stood in: nothing was asked of this machine's systemd but
    # what it would do for a unit it does not have.
    calls = (tmp_path / "calls").read_text() if (tmp_path / "calls").exists() else ""
    assert all(re.match(r"(systemctl --system daemon-reload|deb-systemd-invoke \S+ "
                        r"xdp-rl-exporter\.service)$", c) for c in calls.splitlines()), calls
    assert run(["dpkg-query", "-W", "-f=${Status}", "xdp-rl"]).stdout == host_before
