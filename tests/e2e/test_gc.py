# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""`status --all` and `gc`: limiters whose interface or namespace is gone
keep their maps until gc removes them; a live limiter is never removed.

Another xdp-rl's load or unload on this host also removes a limiter whose
interface is gone (limiter_lock), so where a test races with one, it checks
that the folder was there when the command ran before asking it to say so.
"""
import json
import os

import rlbed


def limiters_all(bed):
    return rlbed.run_ok([rlbed.BIN, "status", "--all", "--json"]).stdout


def mine(doc, ino):
    return [l for l in json.loads(doc)["limiters"] if l["netns"] == ino]


def memlock_of(folder):
    """The maps pinned in @folder and their memlock, as bpftool reads it from the kernel."""
    maps = total = 0
    for name in os.listdir(folder):
        r = rlbed.run(["bpftool", "-j", "map", "show", "pinned", os.path.join(folder, name)])
        if r.returncode == 0:
            maps += 1
            total += json.loads(r.stdout)["bytes_memlock"]
    return maps, total


def test_status_all_and_gc_interface_gone(bed):
    bed.load("--limit", 5, "--max-sources", 2048)
    ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    (l,) = mine(limiters_all(bed), ino)
    assert l["attached"] and l["netns_state"] == "other" and l["netns_name"] == bed.rx, l
    assert l["interface"] == bed.rx_if, l
    folder = l["folder"]
    assert (l["maps"], l["memory_bytes"]) == memlock_of(folder), l
    assert l["maps"] >= 15 and l["memory_bytes"] > 0, l
    text = rlbed.run_ok([rlbed.BIN, "status", "--all"]).stdout
    assert f"{bed.rx_if} (ifindex {l['ifindex']}), netns {ino} ({bed.rx}): attached" in text
    # From inside, it is this namespace's.
    (here,) = mine(bed.xdp_ok("status", "--all", "--json"), ino)
    assert here["netns_state"] == "here", here

    # gc leaves a live limiter alone.
    out = rlbed.run_ok([rlbed.BIN, "gc"]).stdout
    assert folder not in out and os.path.isdir(folder), out
    assert bed.status()["attached"]

    # Its interface deleted: DETACHED, and gc removes it, saying how much it freed.
    rlbed.run_ok(["ip", "-n", bed.rx, "link", "del", bed.rx_if])
    doc = limiters_all(bed)
    if os.path.isdir(folder):
        (l,) = mine(doc, ino)
        assert not l["attached"] and l["netns_state"] == "other", l
    out = rlbed.run_ok([rlbed.BIN, "gc", "--dry-run"]).stdout
    if os.path.isdir(folder):
        assert f"would remove the limiter loaded on {bed.rx_if}" in out, out
    present = os.path.isdir(folder)
    out = rlbed.run_ok([rlbed.BIN, "gc"]).stdout
    if present:
        assert (f"removed the limiter loaded on {bed.rx_if} (ifindex {l['ifindex']}), "
                f"netns {ino} ({bed.rx}): its interface is gone") in out, out
        assert "freed" in out, out
    assert not os.path.exists(folder)
    assert not mine(limiters_all(bed), ino)


def test_gc_namespace_deleted(bed):
    bed.load("--limit", 5, "--max-sources", 2048)
    ino = os.stat(f"/run/netns/{bed.rx}").st_ino
    (l,) = mine(limiters_all(bed), ino)
    folder = l["folder"]
    # The namespace goes, and its veth with it (the kernel tears it down a moment later).
    rlbed.run_ok(["ip", "netns", "del", bed.rx])
    doc = limiters_all(bed)
    if os.path.isdir(folder):
        (l,) = mine(doc, ino)
        assert l["netns_state"] == "gone" and l["netns_name"] is None, l
        assert l["memory_bytes"] > 0, l
    present = os.path.isdir(folder)
    out = rlbed.run_ok([rlbed.BIN, "gc"]).stdout
    if present:
        assert (f"removed the limiter loaded on {bed.rx_if} (ifindex {l['ifindex']}), "
                f"netns {ino}, deleted: its namespace is gone") in out, out
    assert not os.path.exists(folder)
    assert not mine(limiters_all(bed), ino)
    # Nothing of it is left in the bpffs: its namespace's folder went with it.
    assert not os.path.exists(os.path.dirname(folder))
