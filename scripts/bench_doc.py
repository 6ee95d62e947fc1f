#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Put the tables of a `make bench` run into doc/costs.md.

    scripts/bench_doc.py RESULTS DOC [NAME...]     (scripts/bench.sh runs it)

RESULTS is scripts/bench.sh's results.txt: a few lines saying when, at
which commit and on which machine it ran, then its parts, each beginning
"== N. ". DOC holds markers, each pair on lines of their own:

    <!-- bench:NAME begin -->
    ...
    <!-- bench:NAME end -->

for NAME run (the lines before the first part: the date, the commit, the
machine) and kern, e2e, mem, fleet, capture, ban, rate, keys, goals (parts
1 to 9); or, if NAMEs are given, for those only (README.md holds goals). What is
between a pair is replaced by that part of RESULTS, as a block of
preformatted text; everything outside the markers is left as it was, byte
for byte. A part the run did not make leaves its markers' text alone (a
run of some parts only, BENCH_PARTS, has no lines before its first part:
each of its parts says when and where it ran, and `run` keeps its text).
A marker missing, twice, or out of order is an error, and DOC is then not
written."""
import os
import re
import sys

PARTS = {"1": "kern", "2": "e2e", "3": "mem", "4": "fleet", "5": "capture", "6": "ban",
         "7": "rate", "8": "keys", "9": "goals"}
NAMES = ["run"] + list(PARTS.values())


class DocError(Exception):
    pass


def split_results(text):
    """{"run": the header, "kern": part 1, ...} of a results.txt."""
    got, cur, lines = {}, "run", []
    for line in text.splitlines():
        m = re.match(r"^== (\d+)\. ", line)
        if m:
            got[cur] = "\n".join(lines).strip("\n")
            cur, lines = PARTS.get(m.group(1)), [line]
            continue
        if line.startswith("make bench took ") or line.startswith("(written to "):
            continue
        lines.append(line)
    got[cur] = "\n".join(lines).strip("\n")
    got.pop(None, None)
    return {k: v for k, v in got.items() if v}


def block(text):
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def replace_parts(doc, parts, names=NAMES):
    """DOC with each part of @parts named in @names put between its markers."""
    for name in names:
        begin = f"<!-- bench:{name} begin -->"
        end = f"<!-- bench:{name} end -->"
        nb, ne = doc.count(begin + "\n"), doc.count("\n" + end)
        if nb != 1 or ne != 1:
            raise DocError(f"'{begin}' and '{end}' must each be on a line of their own, once "
                           f"(found {nb} and {ne})")
        i = doc.index(begin + "\n") + len(begin) + 1
        j = doc.index("\n" + end)
        if j < i - 1:
            raise DocError(f"'{end}' comes before '{begin}'")
        if name in parts:
            doc = doc[:i] + block(parts[name]) + doc[j:]
    return doc


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: bench_doc.py RESULTS DOC [NAME...]")
    names = argv[3:] or NAMES
    bad = [n for n in names if n not in NAMES]
    if bad:
        sys.exit(f"bench_doc.py: no part is called {', '.join(bad)} (of: {' '.join(NAMES)})")
    with open(argv[1]) as f:
        parts = split_results(f.read())
    with open(argv[2]) as f:
        doc = f.read()
    try:
        new = replace_parts(doc, parts, names)
    except DocError as e:
        sys.exit(f"bench_doc.py: {argv[2]}: {e}; nothing was written")
    tmp = argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, argv[2])
    print(f"(tables written to {argv[2]}: {', '.join(n for n in names if n in parts)})")


if __name__ == "__main__":
    main(sys.argv)
