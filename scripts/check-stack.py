#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The BPF stack budget of an object, as the oldest supported verifier counts it.

    check-stack.py OBJ [--limit 512] [--verbose]

The verifier adds up the stack frames along every chain of bpf-to-bpf calls
(callbacks such as bpf_for_each_map_elem's count as calls) from each program
and refuses a chain over 512 bytes: "combined stack size of N calls is M. Too
large". Linux 6.1 rounds each frame up to 32 bytes; from 6.7 a JITed frame is
rounded to 16 only, so a program can load on 6.12 and be refused on 6.1 with
the same object. This check counts as 6.1 does, on the frames clang laid out
(the deepest r10 offset each function touches, an upper bound of what the
verifier measures), and over every call in the code, dead or not (the
verifier walks them all). It fails the build, naming the chain, before a
kernel does. Exit status: 0 within budget, 1 over, 2 usage or tool error.
"""
import argparse
import os
import re
import subprocess
import sys

ROUND = 32          # Linux 6.1: round_up(max(depth, 1), 32) per frame
MAX_FRAMES = 8      # MAX_CALL_FRAMES


def objdump(args):
    tool = os.environ.get("LLVM_OBJDUMP") or "llvm-objdump"
    try:
        return subprocess.run([tool, *args], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"check-stack: cannot run {tool}: {e}")


def parse(obj):
    """Functions: name -> {section, start (byte offset), depth, calls set}."""
    funcs = {}
    by_offset = {}  # (section, byte offset) -> name
    for line in objdump(["-t", obj]).splitlines():
        m = re.match(r"^([0-9a-f]+)\s+([lg])\s+F\s+(\S+)\s+[0-9a-f]+\s+(\S+)$", line)
        if m:
            off, _, sec, name = m.groups()
            funcs[name] = {"section": sec, "depth": 0, "calls": set()}
            by_offset[(sec, int(off, 16))] = name
    cur = None
    section = None
    fp_regs = set()   # registers that hold r10 (a copy of the frame pointer)
    pending = None    # the instruction a relocation line applies to
    for line in objdump(["-dr", obj]).splitlines():
        m = re.match(r"^Disassembly of section (\S+):", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^[0-9a-f]+ <(\S+)>:", line)
        if m:
            if m.group(1) in funcs:
                cur = m.group(1)
                fp_regs = set()
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+R_BPF_64_(32|64)\s+(\S+)", line)
        if m and cur and pending:
            kind, sym = m.groups()
            if kind == "32" and pending == "call" and sym in funcs:
                funcs[cur]["calls"].add(sym)
            elif kind == "64" and pending[0] == "ld" and sym == ".text":
                # A function's address (a callback): the immediate is its offset.
                callee = by_offset.get((".text", pending[1]))
                if callee:
                    funcs[cur]["calls"].add(callee)
            pending = None
            continue
        # "   12:<TAB>bf a4 00 00 00 00 00 00<TAB>r4 = r10"
        parts = line.split("\t")
        m = re.match(r"^\s*(\d+):$", parts[0])
        if not m or not cur or len(parts) < 3:
            continue
        insn_no, raw, text = int(m.group(1)), parts[1].split(), parts[2].strip()
        code, regs = int(raw[0], 16), int(raw[1], 16)
        src = regs >> 4
        imm = int.from_bytes(bytes(int(b, 16) for b in raw[4:8]), "little", signed=True)
        pending = None
        if code == 0x85:  # call
            if src == 1 and imm != -1:   # a local call, pc-relative
                target = (insn_no + imm + 1) * 8
                callee = by_offset.get((section, target))
                if callee:
                    funcs[cur]["calls"].add(callee)
            elif src == 1 or imm == -1:
                pending = "call"
        elif code == 0x18:  # ld_imm64: may be a function's address
            pending = ("ld", imm & 0xffffffff)
        for off in re.findall(r"r10 - (\d+)\)", text):
            funcs[cur]["depth"] = max(funcs[cur]["depth"], int(off))
        mv = re.match(r"^r(\d) = r10$", text)
        if mv:
            fp_regs.add(mv.group(1))
            continue
        ad = re.match(r"^r(\d) \+= -(\d+)$", text)
        if ad and ad.group(1) in fp_regs:
            funcs[cur]["depth"] = max(funcs[cur]["depth"], int(ad.group(2)))
            continue
        wr = re.match(r"^[rw](\d) ", text)
        if wr and not text.startswith("*"):
            fp_regs.discard(wr.group(1))
    return funcs


def frame(depth):
    return -(-max(depth, 1) // ROUND) * ROUND


def deepest(funcs, name, seen=()):
    """The chain from @name with the most stack: (bytes, [names])."""
    if name in seen:
        sys.exit(f"check-stack: recursion through {name}")
    best = (0, [])
    for callee in funcs[name]["calls"]:
        best = max(best, deepest(funcs, callee, seen + (name,)))
    return frame(funcs[name]["depth"]) + best[0], [name] + best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("obj")
    ap.add_argument("--limit", type=int, default=512)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    funcs = parse(a.obj)
    progs = [n for n, f in funcs.items() if f["section"] != ".text"]
    if not progs:
        print(f"check-stack: no programs in {a.obj}", file=sys.stderr)
        return 2
    bad = 0
    for p in sorted(progs):
        total, chain = deepest(funcs, p)
        parts = " + ".join(f"{n} {frame(funcs[n]['depth'])}" for n in chain)
        over = total > a.limit or len(chain) > MAX_FRAMES
        if over or a.verbose:
            print(f"{'check-stack: ' if over else ''}{os.path.basename(a.obj)}: {p}: "
                  f"{parts} = {total} bytes (limit {a.limit}, frames rounded to {ROUND} "
                  f"as Linux 6.1 does){' TOO LARGE' if over else ''}",
                  file=sys.stderr if over else sys.stdout)
        bad |= over
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
