# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What the build checks before any kernel sees it: scripts/check-stack.py,
the stack of every chain of calls of the BPF program as Linux 6.1's verifier
counts it (frames rounded up to 32 bytes, 512 in all; needs clang and
llvm-objdump, not root); and scripts/check-layers.sh, that user/'s includes
run down its folders (lib/ < user/ < cmd/)."""
import os
import shutil
import subprocess

import pytest

import rlbed

CHECK = os.path.join(rlbed.ROOT, "scripts", "check-stack.py")

# A program that calls mid(), which calls leaf(): three frames of about @n bytes.
CHAIN = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#define N %d
__noinline int leaf(int x)
{
	volatile char b[N];
	for (int i = 0; i < N; i++)
		b[i] = x + i;
	return b[x & 63];
}
__noinline int mid(int x)
{
	volatile char b[N];
	for (int i = 0; i < N; i++)
		b[i] = x + i;
	return b[x & 63] + leaf(x);
}
SEC("xdp") int prog(struct xdp_md *ctx)
{
	volatile char b[N];
	for (int i = 0; i < N; i++)
		b[i] = i;
	return (b[ctx->data & 63] + mid(ctx->data_end)) & 1;
}
char LICENSE[] SEC("license") = "GPL";
"""


def build(tmp_path, n):
    clang = shutil.which("clang")
    if not clang or not (shutil.which("llvm-objdump") or shutil.which("llvm-objdump-14")):
        pytest.skip("clang and llvm-objdump are needed (make deps)")
    src, obj = tmp_path / f"chain{n}.c", tmp_path / f"chain{n}.o"
    src.write_text(CHAIN % n)
    multiarch = subprocess.run(["cc", "-print-multiarch"], capture_output=True,
                               text=True).stdout.strip()
    subprocess.run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{multiarch}",
                    "-c", str(src), "-o", str(obj)], check=True)
    return obj


def check(obj):
    env = dict(os.environ)
    if not shutil.which("llvm-objdump"):
        env["LLVM_OBJDUMP"] = "llvm-objdump-14"
    return subprocess.run(["/usr/bin/python3", CHECK, str(obj), "--verbose"],
                          capture_output=True, text=True, env=env)


def test_a_chain_over_512_bytes_as_6_1_counts_fails_the_build(tmp_path):
    r = check(build(tmp_path, 200))
    assert r.returncode == 1, r
    assert "prog: prog 224 + mid 224 + leaf 224 = 672 bytes" in r.stderr, r.stderr
    assert "TOO LARGE" in r.stderr


def test_a_chain_within_512_bytes_passes(tmp_path):
    r = check(build(tmp_path, 100))
    assert r.returncode == 0, r
    assert "prog: prog 128 + mid 128 + leaf 128 = 384 bytes" in r.stdout, r.stdout


def test_the_program_fits_with_room_named(tmp_path):
    """xdp-rl's own object: every program's deepest chain within 512."""
    obj = os.path.join(rlbed.BUILD, "xdp_rl.bpf.o")
    if not os.path.exists(obj):
        pytest.fail(f"{obj} is missing: run 'make' first")
    r = check(obj)
    assert r.returncode == 0, r.stderr
    for prog in ("xdp_rl", "admin", "clock_sync"):
        assert f": {prog}: " in r.stdout, r.stdout


LAYERS = os.path.join(rlbed.ROOT, "scripts", "check-layers.sh")


def layers(tmp_path, edit=None):
    """check-layers.sh on a copy of user/, after @edit(copy)."""
    user = tmp_path / "user"
    shutil.copytree(os.path.join(rlbed.ROOT, "user"), user)
    if edit:
        edit(user)
    return subprocess.run(["bash", LAYERS, str(user)], capture_output=True, text=True)


def test_user_runs_down_its_layers(tmp_path):
    r = layers(tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("where, header, layer", [
    ("lib/log.c", "limiter.h", "user/ (the models)"),
    ("rules.c", "cli.h", "user/cmd/ (the commands)"),
    ("lib/json.h", "output.h", "user/cmd/ (the commands)"),
])
def test_an_include_up_a_layer_fails(tmp_path, where, header, layer):
    def edit(user):
        with open(user / where, "a") as f:
            f.write(f'#include "{header}"\n')
    r = layers(tmp_path, edit)
    assert r.returncode == 1, r.stderr
    assert f"{where}:" in r.stderr and f"includes {header}, of {layer}" in r.stderr, r.stderr


def test_a_header_name_in_two_layers_fails(tmp_path):
    r = layers(tmp_path, lambda user: shutil.copy(user / "lib" / "log.h", user / "cmd" / "log.h"))
    assert r.returncode == 1 and "log.h is also in" in r.stderr, r.stderr


def test_one_license_everywhere():
    """LICENSE, every source file's SPDX line, the BPF programs' license
    string and debian/copyright state the same terms."""
    root = rlbed.ROOT
    with open(os.path.join(root, "LICENSE")) as f:
        lic = f.read()
    spdx = "GPL-2.0-only OR BSD-2-Clause"
    assert f"SPDX-License-Identifier: {spdx}" in lic
    for name in ("GPL-2.0-only", "BSD-2-Clause"):
        path = os.path.join(root, "LICENSES", f"{name}.txt")
        with open(path) as f:
            text = f.read()
        assert ("GNU GENERAL PUBLIC LICENSE" in text and "Version 2, June 1991" in text
                if name.startswith("GPL") else "Redistribution and use" in text), path
        assert f"LICENSES/{name}.txt" in lic
    files = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h", "*.py", "*.sh"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 50, files
    for p in files:
        with open(os.path.join(root, p)) as f:
            head = f.read(400)
        assert f"SPDX-License-Identifier: ({spdx})" in head, f"{p}: no SPDX line for {spdx}"
        if p.endswith(".bpf.c"):
            with open(os.path.join(root, p)) as f:
                assert 'SEC("license") = "Dual BSD/GPL";' in f.read(), p
    with open(os.path.join(root, "debian", "copyright")) as f:
        assert "License: GPL-2 or BSD-2-clause" in f.read()


PROBE = os.path.join(rlbed.ROOT, "scripts", "probe.sh")


def test_the_build_probes_tools_and_headers_not_packages(tmp_path):
    """make's check finds tools and headers by themselves (scripts/probe.sh),
    so a machine with them installed any way builds; one without is told
    what is missing, by the tool's or header's name."""
    ok = subprocess.run(["bash", PROBE, "build"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
    # A compiler that refuses one header: that header is named, not a package.
    cc = tmp_path / "cc"
    cc.write_text(f'#!/bin/sh\ncat > {tmp_path}/in.c\ngrep -q microhttpd.h {tmp_path}/in.c && exit 1\n'
                  f'exec cc "$@" < {tmp_path}/in.c\n')
    cc.chmod(0o755)
    r = subprocess.run(["bash", PROBE, "build"], capture_output=True, text=True,
                       env={**os.environ, "CC": str(cc), "CLANG": "no-such-clang"})
    assert r.returncode == 1, r.stdout
    assert "no-such-clang (the BPF compiler)" in r.stdout, r.stdout
    assert "<microhttpd.h> and -lmicrohttpd" in r.stdout, r.stdout
    assert "libbpf" not in r.stdout and r.stdout.count("(") == 2, r.stdout
    m = subprocess.run(["make", "-C", rlbed.ROOT, f"BUILD={tmp_path}/b", "CLANG=no-such-clang"],
                       capture_output=True, text=True)
    assert m.returncode != 0 and "make: cannot build: missing: no-such-clang" in m.stderr, m.stderr
    assert not (tmp_path / "b" / "xdp_rl.bpf.o").exists()
