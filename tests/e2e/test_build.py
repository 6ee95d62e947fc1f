# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What the build checks of the BPF program before any kernel sees it:
scripts/check-stack.py, the stack of every chain of calls as Linux 6.1's
verifier counts it (frames rounded up to 32 bytes, 512 in all). Needs clang
and llvm-objdump, not root."""
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
