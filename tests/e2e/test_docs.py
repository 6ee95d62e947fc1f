# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What an operator reads and types agrees with the CLI: `xdp-rl help`,
the man page (doc/xdp-rl.8.scd, whose synopsis is `xdp-rl help`'s command
list) and the bash completion (completion/xdp-rl) name every command,
subcommand, option and option word that `xdp-rl help --options` lists (the
commands' own specs), and nothing it does not; xdp-rl.conf(5)
(doc/xdp-rl.conf.5.scd) names every setting the config parser takes, and
nothing it refuses, and its examples parse. Each disagreement is named with
the file and what to change. Then the man pages render, and are what their
sources make; the completion completes interfaces, namespaces and files;
the versions agree. README's links resolve and its two commands are CI's;
doc/costs.md's figures are between the markers that `make bench` writes,
and the writer touches nothing else. Only the namespace and journal cases
need root."""
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest

import rlbed
from rlbed import run, run_ok

ROOT = rlbed.ROOT
MAN_SRC = os.path.join(ROOT, "doc", "xdp-rl.8.scd")
MAN_PAGE = os.path.join(ROOT, "doc", "xdp-rl.8")
CONF_SRC = os.path.join(ROOT, "doc", "xdp-rl.conf.5.scd")
CONF_PAGE = os.path.join(ROOT, "doc", "xdp-rl.conf.5")
README = os.path.join(ROOT, "README.md")
HACKING = os.path.join(ROOT, "HACKING.md")
COSTS = os.path.join(ROOT, "doc", "costs.md")
COMPLETION = os.path.join(ROOT, "completion", "xdp-rl")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
UNITS = os.path.join(ROOT, "systemd")
# Option values completed with file names.
FILE_ARGS = {"FILE", "PATH"}


@dataclass
class Option:
    arg: str = None
    words: list = field(default_factory=list)


@dataclass
class Spec:
    """`xdp-rl help --options`, parsed."""
    commands: list = field(default_factory=list)
    subcommands: dict = field(default_factory=dict)   # command -> [sub]
    options: dict = field(default_factory=dict)       # command -> {"--opt": Option}
    globals: dict = field(default_factory=dict)       # "-n"/"--netns" -> arg or None


def cli_spec(xdp_rl):
    out = run_ok([xdp_rl, "help", "--options"]).stdout
    spec = Spec()
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "global":
            spec.globals[f[1]] = f[2] if len(f) > 2 else None
        elif f[0] == "command":
            spec.commands.append(f[1])
            spec.subcommands[f[1]] = []
            spec.options[f[1]] = {}
        elif f[0] == "subcommand":
            spec.subcommands[f[1]].append(f[2])
        elif f[0] == "option":
            spec.options[f[1]][f[2]] = Option(f[3] if len(f) > 3 else None,
                                               f[4].split() if len(f) > 4 else [])
        else:
            pytest.fail(f"'xdp-rl help --options' printed an unknown line: {line!r}")
    assert spec.commands and "load" in spec.commands, out
    return spec


@pytest.fixture(scope="module")
def spec(xdp_rl):
    return cli_spec(xdp_rl)


def read(path):
    with open(path) as f:
        return f.read()


# ---- the command list of `xdp-rl help`, and the man page's copy of it ---------

def command_lines(block, commands):
    """{command: its lines' text} from a command list ("  load   IFACE ...",
    continued by lines indented further); a name not in @commands is kept too."""
    got, cur = {}, None
    for line in block.splitlines():
        m = re.match(r"^  (\S+)", line)
        if m:
            cur = m.group(1)
            got[cur] = got.get(cur, "") + line + "\n"
        elif cur and line.startswith("   "):
            got[cur] += line + "\n"
    return got


def check_command_list(where, block, spec, problems):
    listed = command_lines(block, spec.commands)
    for cmd in spec.commands:
        if cmd not in listed:
            problems.append(f"{where}: no line for the command '{cmd}'")
            continue
        for opt in spec.options[cmd]:
            if not re.search(rf"{re.escape(opt)}\b(?!-)", listed[cmd]):
                problems.append(f"{where}: '{cmd}' does not show {opt} (its forms in "
                                f"user/cmd/{cmd}.c, or the settings' in user/settings.c)")
        for sub in spec.subcommands[cmd]:
            if not re.search(rf"^  {cmd}\s+{sub}\b", listed[cmd], re.M):
                problems.append(f"{where}: no line for '{cmd} {sub}'")
    for cmd in listed:
        if cmd not in spec.commands:
            problems.append(f"{where}: lists '{cmd}', which is not a command of xdp-rl")


def help_problems(xdp_rl, spec):
    problems = []
    out = run_ok([xdp_rl, "help"]).stdout
    check_command_list("'xdp-rl help'", out.split("commands:\n", 1)[1].split("\n\n", 1)[0],
                       spec, problems)
    for g in spec.globals:
        if g not in ("-h", "--help") and not re.search(rf"^  .*{re.escape(g)}\b", out, re.M):
            problems.append(f"'xdp-rl help': the global option {g} is not listed")
    for cmd in spec.commands:
        text = run_ok([xdp_rl, "help", cmd]).stdout
        for opt, o in spec.options[cmd].items():
            if not re.search(rf"^  {re.escape(opt)}\b", text, re.M):
                problems.append(f"'xdp-rl help {cmd}': no line for {opt}")
            # A synopsis that shows the words (--mode native|generic) names
            # the same ones as the spec, which completion and the man page follow.
            m = re.search(rf"{re.escape(opt)} ([a-z][a-z0-9,-]*(?:\|[a-z][a-z0-9,-]*)+)\b", text)
            if m and m.group(1).split("|") != o.words:
                problems.append(f"'xdp-rl help {cmd}' shows {opt} {m.group(1)}, but 'xdp-rl "
                                f"help --options' gives it the words {o.words}: name the "
                                f"table its parser takes in the command's .words "
                                f"(struct opt_words)")
    return problems


def help_command_list(xdp_rl):
    out = run_ok([xdp_rl, "help"]).stdout
    return out.split("commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()


def man_synopsis_block(text):
    """The lines of the preformatted block under the man page's '# SYNOPSIS'."""
    synopsis = text.split("\n# SYNOPSIS\n", 1)[1].split("\n# ", 1)[0] \
        if "\n# SYNOPSIS\n" in text else ""
    m = re.search(r"^```\n(.*?)^```", synopsis, re.M | re.S)
    return m.group(1).splitlines() if m else None


def synopsis_problems(xdp_rl, source=MAN_SRC):
    """The man page's synopsis is `xdp-rl help`'s command list, line for line
    (both come from the commands' specs: paste it)."""
    where = "doc/xdp-rl.8.scd"
    got, want = man_synopsis_block(read(source)), help_command_list(xdp_rl)
    if got is None:
        return [f"{where}: '# SYNOPSIS' has no block (```) with 'xdp-rl help''s command list"]
    problems = []
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else None
        w = want[i] if i < len(want) else None
        if g != w:
            problems.append(f"{where}: line {i + 1} of the synopsis block is {g!r}, "
                            f"'xdp-rl help' says {w!r}: paste 'xdp-rl help''s command list")
            break
    return problems


# ---- the man page's source -----------------------------------------------------

def man_sections(text):
    """{"COMMANDS": body, ...} of the '# ' sections, and {"load": body} of the
    '## ' subsections of COMMANDS."""
    sections = dict(re.findall(r"^# (.+)\n((?:(?!# ).*\n?)*)", text, re.M))
    commands = dict(re.findall(r"^## (\S+)\n((?:(?!##? ).*\n?)*)", sections.get("COMMANDS", ""),
                               re.M))
    return sections, commands


def man_terms(body):
    """{"--opt": its term line and description} of the definition lists of @body:
    a line of bold options ("*--dry-run*, *--enforce*") and the indented lines below."""
    terms = {}
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"^\*-", line):
            continue
        desc = [line]
        for nxt in lines[i + 1:]:
            if not nxt.startswith("\t"):
                break
            desc.append(nxt)
        for opt in re.findall(r"\*(--?[a-z0-9-]+)\*", line):
            terms[opt] = "\n".join(desc)
    return terms


def man_problems(spec, source=MAN_SRC):
    problems = []
    where = "doc/xdp-rl.8.scd"
    sections, commands = man_sections(read(source))
    for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "FILES",
                  "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        if title not in sections:
            problems.append(f"{where}: no '# {title}' section")
    globals_ = man_terms(sections.get("OPTIONS", ""))
    for g in spec.globals:
        if g not in globals_:
            problems.append(f"{where}: '# OPTIONS' does not describe the global option {g}")
    for cmd in spec.commands:
        if cmd not in commands:
            problems.append(f"{where}: no '## {cmd}' section under '# COMMANDS' (its synopsis, "
                            f"what it does, and its options)")
            continue
        body = commands[cmd]
        terms = man_terms(body)
        for opt, o in spec.options[cmd].items():
            if opt not in terms:
                problems.append(f"{where}: '## {cmd}' does not describe {opt} (a line "
                                f"'*{opt}*{' _' + o.arg + '_' if o.arg else ''}' with its "
                                f"description indented below)")
                continue
            for w in o.words:
                if f"*{w}*" not in terms[opt]:
                    problems.append(f"{where}: '## {cmd}': {opt} does not name its word "
                                    f"'{w}' (as *{w}*)")
        for opt in terms:
            if opt not in spec.options[cmd]:
                problems.append(f"{where}: '## {cmd}' describes {opt}, which "
                                f"'xdp-rl {cmd}' does not take")
        for sub in spec.subcommands[cmd]:
            if not re.search(rf"^\*{cmd} {sub}\*", body, re.M):
                problems.append(f"{where}: '## {cmd}' has no synopsis line '*{cmd} {sub}* ...'")
    for cmd in commands:
        if cmd not in spec.commands:
            problems.append(f"{where}: '## {cmd}' describes a command xdp-rl does not have")
    return problems



# ---- xdp-rl.conf(5): the config file, against the config parser ----------------

# The lines of a config file that are not settings (user/config.c).
CONF_LINES = ("interface", "rule", "allow-list", "deny-list")
# The options of load and set that a config file does not take (user/config.c
# refuses them, saying why).
NOT_SETTINGS = ("--force", "--rules")


def strip_blocks(text):
    """@text without its preformatted blocks (```), whose lines are examples."""
    return re.sub(r"^```\n.*?^```\n?", "", text, flags=re.M | re.S)


def conf_terms(body):
    """{name: [its words]} of the terms of a definition list: each term line
    ("*per-key*, *aligned*", "*table* *buckets*|*lru*") names one or more
    keywords, each followed by the words it takes."""
    terms = {}
    for line in body.splitlines():
        if not line.startswith("*"):
            continue
        for item in line.split(", "):
            m = re.match(r"^\*([a-z0-9-]+)\*(.*)$", item)
            if m:
                terms[m.group(1)] = re.findall(r"\*([a-z0-9-]+)\*", m.group(2))
    return terms


def conf_blocks(text, section):
    """The preformatted blocks of the '# @section' section of a man page's source."""
    blocks, cur, block = [], None, None
    for line in text.splitlines():
        if line == "```":
            if block is None:
                block = []
            else:
                if cur == section:
                    blocks.append("".join(x + "\n" for x in block))
                block = None
        elif block is not None:
            block.append(line)
        elif line.startswith("# "):
            cur = line[2:]
    return blocks


def check_conf(xdp_rl, tmp_path, text):
    f = tmp_path / "lo.conf"
    f.write_text(text)
    return run([xdp_rl, "apply", "--check", str(f)])


def conf_problems(xdp_rl, spec, tmp_path, source=CONF_SRC):
    where = "doc/xdp-rl.conf.5.scd"
    text = read(source)
    problems = []
    sections = dict(re.findall(r"^# (.+)\n((?:(?!# ).*\n?)*)", strip_blocks(text), re.M))
    for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "SETTINGS", "APPLYING A FILE",
                  "RULES FILE", "EXAMPLES", "SEE ALSO"):
        if title not in sections:
            problems.append(f"{where}: no '# {title}' section")
    lines = conf_terms(sections.get("DESCRIPTION", ""))
    for word in CONF_LINES:
        if word not in lines:
            problems.append(f"{where}: '# DESCRIPTION' does not describe the line '{word}' "
                            f"(a term '*{word}* ...'), which the config parser takes")
    settings = conf_terms(sections.get("SETTINGS", ""))
    want = {}
    for cmd in ("load", "set"):
        for opt, o in spec.options[cmd].items():
            if opt not in NOT_SETTINGS:
                want.setdefault(opt[2:], set()).update(o.words)
    for name in sorted(want):
        if name not in settings:
            problems.append(f"{where}: '# SETTINGS' does not describe '{name}' (a term "
                            f"'*{name}* ...'): the config file takes every option of load "
                            f"and set (user/settings.c)")
    # Nothing the page documents is refused: each name it gives is a setting
    # (or a line) the parser knows, and each word it names is a value the
    # parser takes.
    for name, words in sorted({**lines, **settings}.items()):
        r = check_conf(xdp_rl, tmp_path, f"interface lo\n{name}\n")
        if "unknown setting" in r.stderr or "is no setting" in r.stderr:
            problems.append(f"{where}: documents '{name}', which the config parser refuses: "
                            f"{r.stderr.strip()}")
            continue
        for w in words:
            r = check_conf(xdp_rl, tmp_path, f"interface lo\n{name} {w}\n")
            if f"'{w}'" in r.stderr:
                problems.append(f"{where}: documents '{name} {w}', which the config parser "
                                f"refuses: {r.stderr.strip()}")
    examples = [b for b in conf_blocks(text, "EXAMPLES") if b.startswith("# /etc/xdp-rl/")]
    if not examples:
        problems.append(f"{where}: '# EXAMPLES' has no config file (a block beginning "
                        f"'# /etc/xdp-rl/IFACE.conf')")
    for b in examples:
        r = check_conf(xdp_rl, tmp_path, b)
        if r.returncode != 0 or ": good:" not in r.stdout:
            problems.append(f"{where}: its example config is refused: {r.stderr.strip()}")
    rules = conf_blocks(text, "RULES FILE")
    if not rules:
        problems.append(f"{where}: '# RULES FILE' has no example")
    for b in rules:
        body = "".join(f"rule {line}\n" for line in b.splitlines()
                       if line.strip() and not line.startswith("#"))
        r = check_conf(xdp_rl, tmp_path, "interface lo\n" + body)
        if r.returncode != 0:
            problems.append(f"{where}: its example rules file is refused: {r.stderr.strip()}")
    return problems


def config_word_problems(printed, source=CONF_SRC):
    """Each keyword of what `xdp-rl config` printed is a term of xdp-rl.conf(5)."""
    sections = dict(re.findall(r"^# (.+)\n((?:(?!# ).*\n?)*)", strip_blocks(read(source)), re.M))
    terms = {**conf_terms(sections.get("DESCRIPTION", "")),
             **conf_terms(sections.get("SETTINGS", ""))}
    words = {line.split()[0] for line in printed.splitlines()
             if line.strip() and not line.lstrip().startswith("#")}
    return [f"doc/xdp-rl.conf.5.scd: 'xdp-rl config' prints '{w}', which the page does not "
            f"describe (a term '*{w}* ...')" for w in sorted(words - set(terms))]


def test_what_config_prints_is_documented(bed, tmp_path):
    """Every line `xdp-rl config` prints is one xdp-rl.conf(5) describes."""
    bed.load("--limit", 5, "--window", "1h", "--new-sources", "100/1s",
             "--on-table-full", "aggregate")
    bed.xdp_ok("rule", "add", bed.rx_if, "198.19.70.0/24", "--deny")
    printed = bed.xdp_ok("config", bed.rx_if)
    assert "rule 198.19.70.0/24" in printed, printed
    got = config_word_problems(printed)
    assert not got, "\n".join(got)
    page = tmp_path / "xdp-rl.conf.5.scd"
    page.write_text(read(CONF_SRC).replace("*on-table-full* *pass*", "*on-table-fool* *pass*"))
    assert config_word_problems(printed, str(page)) == [
        "doc/xdp-rl.conf.5.scd: 'xdp-rl config' prints 'on-table-full', which the page does "
        "not describe (a term '*on-table-full* ...')"]


# ---- the completion ----------------------------------------------------------

def complete(queries, cwd=None, completion=COMPLETION, bindir=None):
    """What the completion offers for each query (the words after 'xdp-rl', the
    last the one being completed): a set of words each. The completion asks
    the `xdp-rl` on PATH for its commands and options: this build's, or the
    one in @bindir."""
    if not os.path.exists(BASH_COMPLETION):
        pytest.skip("bash-completion is not installed (scripts/deps.sh installs it)")
    script = [
        f"source {shlex.quote(BASH_COMPLETION)}",
        f"source {shlex.quote(completion)}",
        'q() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*";'
        ' COMP_POINT=${#COMP_LINE}; COMPREPLY=();'
        ' _xdp_rl xdp-rl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}";'
        " local IFS=$'\\t'; printf '%s\\n' \"${COMPREPLY[*]}\"; }",
    ]
    script += ["q xdp-rl " + " ".join(shlex.quote(str(w)) for w in q) for q in queries]
    path = f"{bindir or os.path.dirname(rlbed.BIN)}:{os.environ.get('PATH', '')}"
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                       capture_output=True, text=True, timeout=60, cwd=cwd,
                       env={**os.environ, "PATH": path})
    assert r.returncode == 0 and r.stderr == "", r
    lines = r.stdout.split("\n")[:-1]
    assert len(lines) == len(queries), r.stdout
    return [set(line.split("\t")) - {""} for line in lines]


def host_ifaces():
    return set(os.listdir("/sys/class/net"))


def completion_problems(spec, tmp_path, completion=COMPLETION, bindir=None):
    where = "completion/xdp-rl"
    problems = []
    (tmp_path / "zz-file.conf").write_text("")
    queries, checks = [], []

    def ask(words, check):
        queries.append(words)
        checks.append(check)

    globals_ = set(spec.globals)
    ask(["-"], lambda got: [f"{where}: 'xdp-rl -<TAB>' offers {sorted(got)}, the global "
                            f"options are {sorted(globals_)} (_xdp_rl)"] if got != globals_ else [])
    cmds = set(spec.commands)
    ask([""], lambda got: [f"{where}: 'xdp-rl <TAB>' lacks {c} (_xdp_rl_commands)"
                           for c in sorted(cmds - got)] +
        [f"{where}: 'xdp-rl <TAB>' offers {c}, which is not a command (_xdp_rl_commands)"
         for c in sorted(got - cmds)])
    for cmd in spec.commands:
        want = set(spec.options[cmd]) | {"--help"}
        ask([cmd, "--"], lambda got, cmd=cmd, want=want:
            [f"{where}: 'xdp-rl {cmd} --<TAB>' lacks {o} (_xdp_rl_options)"
             for o in sorted(want - got)] +
            [f"{where}: 'xdp-rl {cmd} --<TAB>' offers {o}, which 'xdp-rl {cmd}' does not "
             f"take (_xdp_rl_options)" for o in sorted(got - want)])
        if spec.subcommands[cmd]:
            subs = set(spec.subcommands[cmd])
            ask([cmd, ""], lambda got, cmd=cmd, subs=subs:
                [f"{where}: 'xdp-rl {cmd} <TAB>' offers {sorted(got)}, its subcommands are "
                 f"{sorted(subs)} (_xdp_rl_positional)"] if got != subs else [])
        for opt, o in spec.options[cmd].items():
            if not o.arg:
                continue
            if o.words:
                want_w = set(o.words)
                ask([cmd, opt, ""], lambda got, cmd=cmd, opt=opt, want_w=want_w:
                    [f"{where}: 'xdp-rl {cmd} {opt} <TAB>' offers {sorted(got)}, its words are "
                     f"{sorted(want_w)} (_xdp_rl_value)"] if got != want_w else [])
            elif o.arg in FILE_ARGS:
                ask([cmd, opt, "zz-"], lambda got, cmd=cmd, opt=opt:
                    [f"{where}: 'xdp-rl {cmd} {opt} zz-<TAB>' offers {sorted(got)}, not the "
                     f"file zz-file.conf: {opt} takes a file name (_xdp_rl_value: _filedir)"]
                    if got != {"zz-file.conf"} else [])
            else:
                ask([cmd, opt, ""], lambda got, cmd=cmd, opt=opt:
                    [f"{where}: 'xdp-rl {cmd} {opt} <TAB>' offers {sorted(got)[:4]}...: it "
                     f"does not know that {opt} takes a value (end it with '=' in "
                     f"_xdp_rl_options)"] if got else [])
    for got, check in zip(complete(queries, cwd=tmp_path, completion=completion, bindir=bindir),
                          checks):
        problems += check(got)
    return problems


# ---- the units' command lines ----------------------------------------------------

def unit_command_lines():
    """(unit, the words of each Exec*= line) of systemd/*.in."""
    for name in sorted(os.listdir(UNITS)):
        for line in read(os.path.join(UNITS, name)).splitlines():
            m = re.match(r"^(Exec\w+)=(.*)$", line)
            if m:
                yield name, m.group(1), m.group(2).split()


def unit_problems(spec):
    problems = []
    for unit, key, words in unit_command_lines():
        where = f"systemd/{unit} ({key})"
        if words[0] != "@SBINDIR@/xdp-rl":
            problems.append(f"{where}: runs {words[0]}, not @SBINDIR@/xdp-rl")
            continue
        i = 1
        while i < len(words) and words[i] in spec.globals:
            i += 2 if spec.globals[words[i]] else 1
        cmd = words[i] if i < len(words) else None
        if cmd == "fleet" and cmd not in spec.commands:
            # The fleet agent (issue 14) may land after its unit: until it is
            # a command, its unit's line cannot be checked.
            continue
        if cmd not in spec.commands:
            problems.append(f"{where}: runs 'xdp-rl {cmd}', which is not a command")
            continue
        for w in words[i + 1:]:
            if w.startswith("--") and w.split("=")[0] not in spec.options[cmd]:
                problems.append(f"{where}: 'xdp-rl {cmd}' does not take {w}")
    return problems


def test_help_readme_man_completion_and_units_agree_with_the_cli(xdp_rl, spec, tmp_path):
    """The CLI's specs, through `xdp-rl help --options`, are the truth; every
    place that names commands and options is compared with them."""
    problems = (help_problems(xdp_rl, spec) + synopsis_problems(xdp_rl) + man_problems(spec) +
                conf_problems(xdp_rl, spec, tmp_path) + completion_problems(spec, tmp_path) +
                unit_problems(spec))
    assert not problems, \
        "what xdp-rl's commands and options are, according to 'xdp-rl help --options', " \
        "is not what these say:\n  " + "\n  ".join(problems)


def test_the_checks_see_what_is_missing(spec, tmp_path):
    """The comparison itself fails when a place lacks something (an option
    taken out of the man page's source; one the completion is not told of,
    through an xdp-rl whose `help --options` lacks it)."""
    man = tmp_path / "xdp-rl.8.scd"
    man.write_text(read(MAN_SRC).replace("*--mode* *native*|*generic*", "*--mod*"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "xdp-rl"
    fake.write_text(f"#!/bin/sh\n{shlex.quote(rlbed.BIN)} \"$@\" | grep -v '^option\tload\t--mode'\n")
    fake.chmod(0o755)
    got_man = man_problems(spec, str(man))
    got_comp = completion_problems(spec, tmp_path, bindir=str(bindir))
    assert "doc/xdp-rl.8.scd: '## load' does not describe --mode (a line '*--mode* _MODE_' " \
        "with its description indented below)" in got_man, got_man
    assert "doc/xdp-rl.8.scd: '## load' describes --mod, which 'xdp-rl load' does not take" \
        in got_man, got_man
    assert "completion/xdp-rl: 'xdp-rl load --<TAB>' lacks --mode (_xdp_rl_options)" \
        in got_comp, got_comp
    assert any(p.startswith("completion/xdp-rl: 'xdp-rl load --mode <TAB>' offers ")
               for p in got_comp), got_comp
    assert len(got_man) == 2 and len(got_comp) == 2, (got_man, got_comp)


def test_the_man_page_checks_see_what_is_wrong(xdp_rl, spec, tmp_path):
    """The synopsis block and xdp-rl.conf(5) checks fail when a page lacks
    something or documents what the parser refuses."""
    man = tmp_path / "xdp-rl.8.scd"
    man.write_text(read(MAN_SRC).replace("  unload IFACE\n", "  unload IFACE [--all]\n"))
    got = synopsis_problems(xdp_rl, str(man))
    assert len(got) == 1 and "'  unload IFACE [--all]'" in got[0], got
    conf = tmp_path / "xdp-rl.conf.5.scd"
    text = read(CONF_SRC)
    assert "*max-layers* _N_\n" in text and "*table* *buckets*|*lru*\n" in text
    conf.write_text(text.replace("*max-layers* _N_\n", "*max-layerz* _N_\n")
                    .replace("*table* *buckets*|*lru*\n", "*table* *buckets*|*lru*|*hash*\n"))
    d = tmp_path / "check"
    d.mkdir()
    got = conf_problems(xdp_rl, spec, d, str(conf))
    assert any("does not describe 'max-layers'" in p for p in got), got
    assert any("documents 'max-layerz', which the config parser refuses" in p for p in got), got
    assert any("documents 'table hash', which the config parser refuses" in p for p in got), got
    assert len(got) == 3, got
    conf.write_text(text.replace("dport 80,443\nv4-prefix", "dport 80,443,http\nv4-prefix"))
    got = conf_problems(xdp_rl, spec, d, str(conf))
    assert len(got) == 1 and "its example config is refused" in got[0], got


# ---- the man page --------------------------------------------------------------

def test_man_page_is_made_from_its_source():
    """doc/xdp-rl.8 and doc/xdp-rl.conf.5 are committed; each must be what
    scdoc makes of its source (make check-man checks both)."""
    if not shutil.which("scdoc"):
        pytest.skip("scdoc is not installed (scripts/deps.sh installs it)")
    r = rlbed.make("check-man", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_man_page_renders(spec):
    for tool in ("man", "groff"):
        if not shutil.which(tool):
            pytest.skip(f"'{tool}' is not installed (scripts/deps.sh installs it)")
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    r = run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN_PAGE], env=env)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r
    r = run(["man", "--warnings", "-l", MAN_PAGE], env=env)
    assert r.returncode == 0 and r.stderr == "", r
    text = re.sub(r".\x08", "", r.stdout)
    assert text.startswith("xdp-rl(8)"), text[:200]
    for title in ("NAME", "SYNOPSIS", "COMMANDS", "FILES", "EXIT STATUS", "EXAMPLES"):
        assert re.search(rf"^{title}$", text, re.M), title
    for cmd in spec.commands:
        assert re.search(rf"^   {cmd}$", text, re.M), f"no '{cmd}' subsection in:\n{text}"
    assert re.search(r"xdp-rl\.conf\(5\)", text.split("SEE ALSO", 1)[-1]), \
        "doc/xdp-rl.8.scd: SEE ALSO must name xdp-rl.conf(5)"
    r = run(["groff", "-man", "-Tutf8", "-ww", "-z", CONF_PAGE], env=env)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r
    r = run(["man", "--warnings", "-l", CONF_PAGE], env=env)
    assert r.returncode == 0 and r.stderr == "", r
    text = re.sub(r".\x08", "", r.stdout)
    assert text.startswith("xdp-rl.conf(5)"), text[:200]
    for title in ("NAME", "DESCRIPTION", "SETTINGS", "RULES FILE", "EXAMPLES", "SEE ALSO"):
        assert re.search(rf"^{title}$", text, re.M), title


def makefile_version():
    return re.search(r"^VERSION\s*:?=\s*(\S+)", read(os.path.join(ROOT, "Makefile")), re.M).group(1)


def test_versions_agree(xdp_rl):
    """The Makefile's VERSION is the binary's, the man page's and the package's."""
    v = makefile_version()
    assert run_ok([xdp_rl, "--version"]).stdout.startswith(f"xdp-rl {v} "), v
    first = read(MAN_SRC).splitlines()[0]
    assert first == f'xdp-rl(8) "xdp-rl {v}"', \
        f"doc/xdp-rl.8.scd begins {first!r}: write 'xdp-rl {v}' there and run 'make man'"
    first = read(CONF_SRC).splitlines()[0]
    assert first == f'xdp-rl.conf(5) "xdp-rl {v}"', \
        f"doc/xdp-rl.conf.5.scd begins {first!r}: write 'xdp-rl {v}' there and run 'make man'"
    changelog = read(os.path.join(ROOT, "debian", "changelog")).splitlines()[0]
    assert changelog.startswith(f"xdp-rl ({v}) "), \
        f"debian/changelog's latest entry is {changelog!r}, not version {v} (dch -v {v})"


def test_example_config_is_valid(xdp_rl):
    """The config installed as an example is one apply takes."""
    for name in os.listdir(os.path.join(ROOT, "doc", "examples")):
        if name.endswith(".conf"):
            r = run([xdp_rl, "apply", "--check", os.path.join(ROOT, "doc", "examples", name)])
            assert r.returncode == 0 and ": good:" in r.stdout, r


# ---- the completion, beyond the lists ------------------------------------------

def test_completion_interfaces_files_and_positions(tmp_path):
    (tmp_path / "eth0.conf").write_text("")
    (tmp_path / "rules.txt").write_text("")
    ifaces = host_ifaces()
    got = complete([
        ["load", ""],                              # the first argument: an interface
        ["load", "--limit", "5", ""],              # after an option's value: still it
        ["load", "--limit=5", ""],
        ["load", "lo", ""],                        # then nothing
        ["lo", ""],                                # a command's unambiguous prefix
        ["s", "-"],                                # an ambiguous one: nothing
        ["load", "lo", "--mode=g"],                # --opt=word
        ["set", "lo", "--on", ""],                 # --on is not an option: no value
        ["rule", "add", ""],                       # rule SUB IFACE
        ["rule", "add", "lo", "198.18.0.0/24", "--pro"],
        ["apply", ""],                             # a file
        ["apply", "--check", "eth"],
        ["load", "lo", "--rules", "ru"],
        ["help", "st"],
        ["-v", "unl"],
        ["--netns=zz", "-v", "help", ""],
        ["load", "lo", "--mode", "native", "--f"],
    ], cwd=tmp_path)
    assert got[0] == ifaces and "lo" in ifaces
    assert got[1] == ifaces and got[2] == ifaces
    assert got[3] == set()
    assert got[4] == ifaces
    assert got[5] == set()
    assert got[6] == {"generic"}
    assert got[7] == set()
    assert got[8] == ifaces
    assert got[9] == {"--proto"}
    assert got[10] == {"eth0.conf", "rules.txt"}
    assert got[11] == {"eth0.conf"}
    assert got[12] == {"rules.txt"}
    assert got[13] == {"status", "stats"}
    assert got[14] == {"unload"}
    assert got[15] == set(cli_spec(rlbed.BIN).commands)
    assert got[16] == {"--force"}


def test_completion_interfaces_of_the_namespace(privileged):
    """-n NETNS: its namespaces, then the interfaces of the one named."""
    ns, link = f"{rlbed.new_tag()}-cmp", f"zz{os.getpid() % 10000}-c"
    run_ok(["ip", "netns", "add", ns])
    try:
        run_ok(["ip", "-n", ns, "link", "add", link + "a", "type", "veth", "peer", "name",
                link + "b"])
        got = complete([["-n", ""], ["-n", ns, "load", ""], ["--netns", ns, "rule", "del", ""],
                        ["-n", ns, "load", link[:3]]])
        assert ns in got[0]
        assert got[1] == {"lo", link + "a", link + "b"}, got[1]
        assert got[2] == got[1]
        assert got[3] == {link + "a", link + "b"}
    finally:
        run(["ip", "netns", "del", ns])


def test_the_kernel_floor_and_the_tested_kernels_are_stated_as_built():
    """README and the man page give the kernel floor the CLI checks
    (SKEL_KERNEL_MIN, user/lib/skel.h), and README's table names every kernel
    of the matrix make test runs (the Makefile's KERNELS)."""
    with open(os.path.join(ROOT, "user", "lib", "skel.h")) as f:
        floor = re.search(r'#define SKEL_KERNEL_MIN "([0-9.]+)"', f.read()).group(1)
    with open(os.path.join(ROOT, "Makefile")) as f:
        kernels = re.search(r"^KERNELS \?= (.*)$", f.read(), re.M).group(1).split()
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    with open(MAN_SRC) as f:
        man = f.read()
    assert f"xdp-rl needs Linux {floor} or later" in readme, \
        f"README.md: say 'xdp-rl needs Linux {floor} or later' (user/lib/skel.h)"
    assert f"Linux {floor} or later" in man, \
        f"doc/xdp-rl.8.scd: REQUIREMENTS must say 'Linux {floor} or later'"
    assert floor in kernels, f"Makefile: KERNELS must test the floor, {floor}"
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    for k in kernels:
        assert any(line.startswith(f"| `{k}`") for line in rows), \
            f"README.md: the kernels table has no row for `{k}` (Makefile's KERNELS)"


def test_the_journal_is_where_the_docs_say(bed, tmp_path):
    """An apply killed after writing its journal leaves it at the path
    doc/state.md and xdp-rl.conf(5) give,
    /run/xdp-rl/journal/apply-<netns cookie>.conf, holding the file's target."""
    state = " ".join(read(os.path.join(ROOT, "doc", "state.md")).split())
    m = re.search(r"`(/run/xdp-rl/journal/apply-)<netns cookie>(\.conf)`", state)
    assert m, "doc/state.md: the journal's path, `/run/xdp-rl/journal/apply-<netns cookie>.conf`"
    assert "_/run/xdp-rl/journal/apply-<netns cookie>.conf_" in " ".join(read(CONF_SRC).split()), \
        "doc/xdp-rl.conf.5.scd: the journal's path, _/run/xdp-rl/journal/apply-<netns cookie>.conf_"
    faults = os.path.join(rlbed.BUILD, "xdp-rl-faults")
    conf = tmp_path / "j.conf"
    conf.write_text(f"interface {bed.rx_if}\nlimit 7\nwindow 1h\n")
    trace = run([faults, "-n", bed.rx, "apply", str(conf)],
                env=dict(os.environ, XDP_RL_FAULT_TRACE="1"))
    assert trace.returncode == 0, trace
    points = [line for line in trace.stderr.splitlines() if "fault point" in line]
    at = next(i for i, p in enumerate(points, 1) if "journal: committed" in p)
    bed.xdp_ok("unload", bed.rx_if)
    conf.write_text(f"interface {bed.rx_if}\nlimit 8\nwindow 1h\n")
    r = run([faults, "-n", bed.rx, "apply", str(conf)],
            env=dict(os.environ, XDP_RL_FAULT_AT=str(at)))
    assert r.returncode == -9, r
    cookie = run_ok(["ip", "netns", "exec", bed.rx, rlbed.PY, "-c",
                     "import socket, struct; s = socket.socket(socket.AF_UNIX); "
                     "print(struct.unpack('Q', s.getsockopt(socket.SOL_SOCKET, 71, 8))[0])"]
                    ).stdout.strip()
    path = f"{m.group(1)}{cookie}{m.group(2)}"
    try:
        with open(path) as f:
            assert "limit 8" in f.read()
    finally:
        bed.xdp("status")  # finishes the apply, and removes the journal
    assert not os.path.exists(path) and bed.status()["limit"] == 8


# ---- README: the front page's links and its two commands --------------------------

def md_links(path):
    """(target, line) of the relative links of a Markdown file, outside code."""
    text = strip_blocks(read(path))
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if not re.match(r"^[a-z]+:", target) and not target.startswith("#"):
            yield target.split("#", 1)[0], text.count("\n", 0, m.start()) + 1


def link_problems(paths):
    problems = []
    for path in paths:
        for target, line in md_links(path):
            full = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if not os.path.exists(full):
                problems.append(f"{os.path.relpath(path, ROOT)}:{line}: links to {target}, "
                                f"which does not exist")
    return problems


def docs_md():
    d = os.path.join(ROOT, "doc")
    return [README, HACKING] + sorted(os.path.join(d, f) for f in os.listdir(d)
                                      if f.endswith(".md"))


def test_readme_and_the_docs_link_to_files_that_exist(tmp_path):
    problems = link_problems(docs_md())
    assert not problems, "\n".join(problems)
    readme = read(README)
    for f in ("doc/xdp-rl.8.scd", "doc/xdp-rl.conf.5.scd", "doc/design.md", "doc/tables.md",
              "doc/costs.md", "doc/fleet.md", "doc/state.md", "HACKING.md"):
        assert f"]({f})" in readme, f"README.md: no link to {f}"
    # The check fails on a link to nothing.
    bad = tmp_path / "x.md"
    bad.write_text("see [here](doc/nothing.md) and [ok](https://example.org)\n")
    assert link_problems([str(bad)]) == [f"{os.path.relpath(str(bad), ROOT)}:1: links to "
                                         f"doc/nothing.md, which does not exist"]


def readme_commands(text):
    """The commands of README's first block ({"demo": "make demo", ...}): it is
    the first thing README shows."""
    m = re.match(r"^# xdp-rl\n\n```sh\n(.*?)^```", text, re.M | re.S)
    if not m:
        return None
    return {line.split()[1]: " ".join(line.split("#", 1)[0].split())
            for line in m.group(1).splitlines() if line.startswith("make ")}


def ci_command(text):
    """The last command of .ci/run: what CI runs."""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    return lines[-1]


def command_problems(readme, ci, hacking):
    cmds = readme_commands(readme)
    if cmds is None:
        return ["README.md: does not begin with '# xdp-rl' and a block (```sh) of its "
                "two commands"]
    problems = []
    if set(cmds) != {"demo", "test"}:
        problems.append(f"README.md: its first block gives {sorted(cmds.values())}, not "
                        f"'make demo' and 'make test' alone")
    if cmds.get("test") != ci_command(ci):
        problems.append(f".ci/run runs {ci_command(ci)!r}, README's test command is "
                        f"{cmds.get('test')!r}: make them the same")
    for name, cmd in cmds.items():
        if not re.search(rf"^{re.escape(cmd)}(\s|$)", hacking, re.M):
            problems.append(f"HACKING.md: 'Running things' has no line for README's {cmd!r}")
    return problems


def test_readmes_two_commands_are_cis_and_hackings():
    """README begins with the two commands; CI runs the same test command,
    and HACKING lists both."""
    readme, ci, hacking = read(README), read(os.path.join(ROOT, ".ci", "run")), read(HACKING)
    assert not command_problems(readme, ci, hacking), command_problems(readme, ci, hacking)
    assert len(readme.splitlines()) <= 400, "README.md is a front page: a few hundred lines"
    # The check fails when they part.
    got = command_problems(readme, ci.replace("make test", "make e2e"), hacking)
    assert got == [f".ci/run runs 'make e2e', README's test command is 'make test': make them "
                   f"the same"], got
    got = command_problems(readme.replace("make demo ", "make show "), ci, hacking)
    assert any("not 'make demo' and 'make test' alone" in p for p in got), got


# ---- doc/costs.md: the tables make bench writes ------------------------------------

def bench_doc():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "bench_doc", os.path.join(ROOT, "scripts", "bench_doc.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SAMPLE_RESULTS = """xdp-rl bench, 2026-01-02 03:04 UTC, abc1234
kernel 6.1.0-1-amd64, 2 CPUs (Some CPU), clocksource kvm-clock
A shared VM: its speed drifts.

== 1. In-kernel cost per packet: BPF_PROG_TEST_RUN with repeat
bare XDP_DROP   12 ns
xdp-rl          +20

== 2. End to end: a flood through a veth pair
xdp-rl  209 ns/frame

== 3. Map memory per tracked source
src4  64.0 B/source

== 4. The fleet agent (xdp-rl fleet)
  skipped: redis-server is not installed

make bench took 600 s
"""


def outside_markers(text):
    return re.sub(r"<!-- bench:(\w+) begin -->\n(?:.*?\n)?<!-- bench:\1 end -->", "<markers>",
                  text, flags=re.S)


def test_bench_doc_replaces_only_between_markers():
    """scripts/bench_doc.py puts a run's parts between their markers, and
    leaves every byte outside them as it was."""
    bd = bench_doc()
    doc = read(COSTS)
    parts = bd.split_results(SAMPLE_RESULTS)
    assert set(parts) == {"run", "kern", "e2e", "mem", "fleet"}, parts
    assert "abc1234" in parts["run"] and "kernel 6.1.0-1-amd64" in parts["run"]
    assert "make bench took" not in parts["fleet"]
    new = bd.replace_parts(doc, parts)
    assert outside_markers(new) == outside_markers(doc)
    for name in ("run", "kern", "e2e", "mem", "fleet"):
        between = new.split(f"<!-- bench:{name} begin -->\n", 1)[1] \
            .split(f"\n<!-- bench:{name} end -->", 1)[0]
        assert between == "```\n" + parts[name] + "\n```", (name, between)
    assert bd.replace_parts(new, parts) == new
    # A part the run did not make keeps what was there.
    partial = bd.replace_parts(doc, {"kern": "x 1"})
    assert outside_markers(partial) == outside_markers(doc)
    assert partial.split("<!-- bench:e2e begin -->", 1)[1] == \
        doc.split("<!-- bench:e2e begin -->", 1)[1]
    # A marker missing or twice: an error, nothing replaced.
    for broken in (doc.replace("<!-- bench:mem end -->", ""),
                   doc + "<!-- bench:kern begin -->\n"):
        with pytest.raises(bd.DocError):
            bd.replace_parts(broken, parts)


def test_bench_doc_writes_the_file(tmp_path):
    results, doc = tmp_path / "results.txt", tmp_path / "costs.md"
    results.write_text(SAMPLE_RESULTS)
    doc.write_text(read(COSTS))
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_doc.py"), str(results), str(doc)])
    assert r.returncode == 0, r
    assert "2026-01-02 03:04 UTC, abc1234" in doc.read_text()
    assert outside_markers(doc.read_text()) == outside_markers(read(COSTS))
    doc.write_text("no markers\n")
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_doc.py"), str(results), str(doc)])
    assert r.returncode != 0 and "nothing was written" in r.stderr, r
    assert doc.read_text() == "no markers\n"


def test_bench_doc_writes_goals_into_readme(tmp_path):
    """Part 9, the goals, goes into README.md's own markers, and nothing else
    of README changes; the same names are refused when the file lacks them."""
    results, doc = tmp_path / "results.txt", tmp_path / "README.md"
    results.write_text(SAMPLE_RESULTS + "\n== 9. The cost goals\ngoal  1.05x  holds\n")
    doc.write_text(read(README))
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_doc.py"), str(results), str(doc),
             "goals"])
    assert r.returncode == 0, r
    text = doc.read_text()
    assert "goal  1.05x  holds" in text and "abc1234" not in text, text
    assert outside_markers(text) == outside_markers(read(README))
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_doc.py"), str(results), str(doc),
             "nosuch"])
    assert r.returncode != 0 and "no part is called nosuch" in r.stderr, r


def test_readme_cost_section_quotes_no_figure():
    """README's cost section states no figure of its own: its goals are the
    block make bench writes."""
    text = read(README)
    section = text.split("\n## What it costs\n", 1)[1].split("\n## ", 1)[0]
    assert section.count("<!-- bench:goals begin -->") == 1, section
    got = [m.group(0) for m in FIGURE.finditer(outside_markers(section))]
    assert not got, got


def test_bench_goals_judges_one_run(tmp_path):
    """scripts/bench_goals.py reads parts 1 and 2's raw data and says, per
    goal, the median and range of this run and whether it holds."""
    def steady(name, drop, pas, bare):
        return {"section": "kern_steady", "scenario": name,
                "raw_kern_ns": {"xdp_rl_drop": drop, "xdp_rl_pass": pas, "bare_drop": bare}}
    kern = [steady("IPv4 100 000, 1 CPU", [180, 181, 179, 185, 182], [170] * 5, [30] * 5),
            steady("IPv4 1 000 000, 1 CPU", [220, 221, 219, 229, 222], [200] * 5, [30] * 5)]
    e2e = {"per_round": {
        "xdp_rl": {str(i): {"ratio": x} for i, x in enumerate([1.05, 1.07, 1.06, 1.2, 1.0, 1.06])},
        "xdp_rl_lru": {str(i): {"ratio": x} for i, x in enumerate([1.5, 1.4, 1.45, 1.44, 1.6])}}}
    kj, ej = tmp_path / "kern.json", tmp_path / "e2e.json"
    kj.write_text(json.dumps(kern))
    ej.write_text(json.dumps(e2e))
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_goals.py"), str(kj), str(ej)])
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert len(lines) == 5, r.stdout
    assert "1.06x [1.06..1.06]" in lines[1] and lines[1].endswith("holds"), lines[1]
    assert "+11 ns [+10..+12]" in lines[2] and lines[2].endswith("not yet"), lines[2]
    assert "+191 ns [+190..+192]" in lines[3] and lines[3].endswith("holds"), lines[3]
    assert "1.45x [1.45..1.45]" in lines[4] and lines[4].endswith("not yet"), lines[4]

    # With the one-line-per-source floors in parts 1 and 2: their rows, and
    # xdp-rl over them, round by round and run by run, under the goals they
    # explain.
    kern[1]["raw_kern_ns"]["line_floor_long_drop"] = [150, 152, 149, 151, 170]
    for i, x in enumerate([1.05, 1.07, 1.06, 1.2, 1.0, 1.06]):
        e2e["per_round"]["xdp_rl"][str(i)]["cpu_per_frame"] = 100 * x
    # The floor ran in 5 of the 6 rounds: xdp-rl is compared in those alone.
    e2e["per_round"]["line_floor"] = {str(i): {"ratio": 1.0 + i / 100,
                                               "cpu_per_frame": 100 + i}
                                      for i in range(5)}
    kj.write_text(json.dumps(kern))
    ej.write_text(json.dumps(e2e))
    r = run([rlbed.PY, os.path.join(ROOT, "scripts", "bench_goals.py"), str(kj), str(ej)])
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert len(lines) == 9, r.stdout
    assert "1.06x [1.06..1.06]" in lines[1] and lines[1].endswith("holds"), lines[1]
    assert "floor" in lines[2] and "1.02x [1.02..1.02]" in lines[2], lines[2]
    # Per round 105/100, 107/101, 106/102, 120/103, 100/104 over the floor, 2
    # trimmed each side: 1.05 (the ratio of the medians would be 1.04).
    assert "over that floor" in lines[3] and "1.05x [1.05..1.05]" in lines[3], lines[3]
    assert "+191 ns [+190..+192]" in lines[5] and lines[5].endswith("holds"), lines[5]
    assert "as long a program" in lines[6] and "+121 ns [+120..+122]" in lines[6], lines[6]
    assert "over that floor" in lines[7] and "+70 ns [+69..+70]" in lines[7], lines[7]
    assert "1.45x [1.45..1.45]" in lines[8] and lines[8].endswith("not yet"), lines[8]


# A figure: a number with a unit of time, size or ratio, or a cost over bare XDP_DROP.
FIGURE = re.compile(r"(?<![\w.])(?:\+\d[\d.]*|\d[\d .,]*\s?(?:ns|us|ms|s|MB|kB|B|x|%))(?![\w])")


def figure_problems(text):
    prose = outside_markers(text)
    return [f"doc/costs.md: the text outside the bench markers quotes {m.group(0).strip()!r} "
            f"(line {prose.count(chr(10), 0, m.start()) + 1} outside them): a figure belongs "
            f"in the tables make bench writes" for m in FIGURE.finditer(prose)]


def test_costs_prose_quotes_no_figure():
    """doc/costs.md's figures are all between the markers make bench rewrites,
    so the text never states a figure the last run did not."""
    doc = read(COSTS)
    for name in ("run", "kern", "e2e", "mem", "fleet"):
        assert doc.count(f"<!-- bench:{name} begin -->") == 1, name
    got = figure_problems(doc)
    assert not got, "\n".join(got)
    got = figure_problems(doc.replace("## 3. Memory\n", "## 3. Memory\n\nIt takes 64.0 B.\n"))
    assert len(got) == 1 and "'64.0 B'" in got[0], got
