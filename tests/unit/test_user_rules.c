// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_rules.c - the rules parser (user/rules.h): rule_parse on the
 * words of `rule add`, and rules_file on files in a folder of its own under
 * $TMPDIR. No root, no kernel; built into build/test_user.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "log.h"
#include "options.h"
#include "rules.h"
#include "unit.h"

#define SEC_NS 1000000000ULL

/* ---- rule_parse ------------------------------------------------------------ */

/* rule_parse on the words given, as the command line `rule add WORDS...` gives them. */
#define PARSE_RULE(r, why, ...)                                                \
	rule_parse(sizeof((char *[]){ "rule", __VA_ARGS__ }) / sizeof(char *), \
		   (char *[]){ "rule", __VA_ARGS__, NULL }, r, why, sizeof(why))

UNIT_TEST(rule_parse)
{
	struct rule_spec r;
	char why[256];

	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow"), 0,
		  "rule_parse: CIDR --allow is accepted");
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_ALLOW, "rule_parse: --allow is an allow rule");
	ASSERT_EQ(r.prefix, 24, "rule_parse: its prefix length is 24");
	ASSERT_EQ(r.addr.family, AF_INET, "rule_parse: its prefix is IPv4");
	ASSERT_EQ(PARSE_RULE(&r, why, "--deny", "2001:2::/48"), 0,
		  "rule_parse: options before the CIDR are accepted");
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_DENY, "rule_parse: --deny is a deny rule");
	ASSERT_EQ(r.prefix, 48, "rule_parse: its prefix length is 48");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/16", "--layer", "10/1s", "--layer=100/1m",
			     "--shared"),
		  0, "rule_parse: two layers, shared, are accepted");
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_LIMIT, "rule_parse: --layer is a limit rule");
	ASSERT_EQ(r.rule.nlayers, 2, "rule_parse: two --layer options are two layers");
	ASSERT_EQ(r.rule.layer[1].limit, 100, "rule_parse: the second layer's limit");
	ASSERT_EQ(r.rule.layer[1].window_ns, 60 * SEC_NS, "rule_parse: the second layer's window");
	ASSERT_EQ(r.rule.flags, XDP_RL_RULE_F_SHARED, "rule_parse: --shared sets the flag");

	ASSERT_EQ(PARSE_RULE(&r, why, "--allow"), -1, "rule_parse: no CIDR is refused");
	ASSERT_STREQ(why, "missing CIDR", "rule_parse: ... saying it is missing");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "198.18.1.0/24", "--allow"), -1,
		  "rule_parse: two CIDRs are refused");
	ASSERT_STREQ(why, "unexpected argument '198.18.1.0/24'",
		     "rule_parse: ... naming the second");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24"), -1, "rule_parse: no action is refused");
	ASSERT_STREQ(why, "give exactly one of --allow, --deny, --layer N/DUR or --rate N/DUR",
		     "rule_parse: ... saying which to give");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--deny"), -1,
		  "rule_parse: --allow with --deny is refused");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--layer", "1/1s"), -1,
		  "rule_parse: --allow with --layer is refused");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--shared"), -1,
		  "rule_parse: --shared without --layer is refused");
	ASSERT_STREQ(why, "--shared goes with --layer or --rate", "rule_parse: ... saying so");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--layer", "2/1s",
			     "--layer", "3/1s", "--layer", "4/1s", "--layer", "5/1s"),
		  -1, "rule_parse: a fifth layer is refused");
	ASSERT_STREQ(why, "at most 4 --layer options", "rule_parse: ... saying how many may be");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1"), -1,
		  "rule_parse: a bad layer is refused");
	ASSERT_STRSTR(why, "invalid --layer '1/1': window '1': needs a unit",
		      "rule_parse: ... saying why");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer"), -1,
		  "rule_parse: --layer without its value is refused");
	ASSERT_STREQ(why, "option '--layer' needs a value", "rule_parse: ... naming it");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--bogus"), -1,
		  "rule_parse: an unknown option is refused");
	ASSERT_STREQ(why, "unknown option '--bogus'", "rule_parse: ... naming it");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.1/24", "--allow"), -1,
		  "rule_parse: a CIDR with bits past its length is refused");
	ASSERT_STREQ(why,
		     "invalid CIDR '198.18.0.1/24': bits set past /24 "
		     "(did you mean 198.18.0.0/24?)",
		     "rule_parse: ... with the prefix meant");
}

/* --ban DUR: a rule's per-source limits ban a source that goes over them. */
UNIT_TEST(rule_parse_ban)
{
	struct rule_spec r;
	char why[256], text[RULE_TEXT_MAX];

	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "10/1s", "--ban", "10m"), 0,
		  "rule_parse: --layer with --ban is accepted");
	ASSERT_EQ(r.rule.ban_ns, 600 * SEC_NS, "rule_parse: --ban 10m is 600 s");
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_LIMIT, "rule_parse: ... a limit rule");
	rule_format(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 --layer 10/1s --ban 10m",
		     "rule_format: the ban after the layers, as rule_parse takes it");
	rule_describe(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 limit 10/1s ban 10m", "rule_describe: ... and the ban");
	ASSERT_EQ(PARSE_RULE(&r, why, "--ban=1ms", "2001:2::/48", "--layer", "1/1s", "--proto",
			     "tcp"),
		  0, "rule_parse: --ban=DUR before the CIDR, at its shortest");
	ASSERT_EQ(r.rule.ban_ns, 1000000ULL, "rule_parse: --ban 1ms");
	rule_format(&r, text, sizeof(text));
	ASSERT_STREQ(text, "2001:2::/48 --layer 1/1s --ban 1ms --proto tcp",
		     "rule_format: the ban before the selector");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "366d"), 0,
		  "rule_parse: --ban 366d, the longest");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "off"), 0,
		  "rule_parse: --ban off is accepted");
	ASSERT_EQ(r.rule.ban_ns, 0, "rule_parse: ... and is no ban");
	rule_format(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 --layer 1/1s", "rule_format: no ban, no --ban");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "0"), 0,
		  "rule_parse: --ban 0 is off too");
	ASSERT_EQ(r.rule.ban_ns, 0, "rule_parse: ... no ban");

	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--shared", "--ban",
			     "1m"),
		  -1, "rule_parse: --ban with --shared is refused");
	ASSERT_STREQ(why, "a --shared budget is not banned: --ban applies to per-source limits",
		     "rule_parse: ... saying why");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--deny", "--ban", "1m"), -1,
		  "rule_parse: --ban with --deny is refused");
	ASSERT_STRSTR(why, "--ban goes with --layer", "rule_parse: ... saying with what it goes");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--ban", "off"), -1,
		  "rule_parse: --ban off with --allow is refused too");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "1"), -1,
		  "rule_parse: a ban without a unit is refused");
	ASSERT_STREQ(why,
		     "invalid --ban '1': needs a unit: ns, us, ms, s, m, h or d (e.g. 500ms, "
		     "1s, 1.5s) (or 'off')",
		     "rule_parse: ... saying why");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "999us"), -1,
		  "rule_parse: a ban shorter than 1ms is refused");
	ASSERT_STRSTR(why, "out of range 1ms..366d", "rule_parse: ... giving the range");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "367d"), -1,
		  "rule_parse: a ban longer than 366d is refused");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban", "1m", "--ban",
			     "2m"),
		  -1, "rule_parse: --ban twice is refused");
	ASSERT_STREQ(why, "option '--ban' given twice (give it once)", "rule_parse: ... naming it");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--layer", "1/1s", "--ban"), -1,
		  "rule_parse: --ban without its value is refused");
	ASSERT_STREQ(why, "option '--ban' needs a value", "rule_parse: ... naming it");
}

/* ---- rules_file ------------------------------------------------------------ */

/* A folder of its own for a test's files, removed with everything in it. */
struct tmp {
	char dir[256];
	char path[320]; /* of the last file written */
	char err[1024]; /* what the last rules() wrote on stderr */
};

static int tmp_open(struct tmp *t)
{
	const char *base = getenv("TMPDIR");

	/* cppcheck takes this write into t->dir for a read of the caller's unset t. */
	/* cppcheck-suppress ctuuninitvar */
	snprintf(t->dir, sizeof(t->dir), "%s/xdp-rl-unit.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(t->dir)) {
		UNIT_FAIL("%s: mkdtemp %s: %s", unit_name(), t->dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void tmp_close(struct tmp *t)
{
	if (nftw(t->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS))
		UNIT_FAIL("%s: remove %s: %s", unit_name(), t->dir, strerror(errno));
}

/* Write @text to the file @name in the folder; its path in t->path. */
static const char *tmp_file(struct tmp *t, const char *name, const char *text)
{
	FILE *f;

	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
	f = fopen(t->path, "w");
	if (!f || fputs(text, f) < 0) {
		UNIT_FAIL("%s: write %s: %s", unit_name(), t->path, strerror(errno));
		if (f)
			fclose(f);
	} else if (fclose(f)) { /* a failed fclose has closed it all the same */
		UNIT_FAIL("%s: write %s: %s", unit_name(), t->path, strerror(errno));
	}
	return t->path;
}

/*
 * rules_file on @path, its stderr kept in t->err: its return, the rules in
 * *n (freed: their count is what the tests look at, and @first the first).
 */
static int rules(struct tmp *t, const char *path, size_t *n, struct rule_spec *first)
{
	struct rule_spec *v = NULL;
	int saved, fd, ret;
	char errpath[sizeof(t->dir) + 16];
	ssize_t len;

	snprintf(errpath, sizeof(errpath), "%s/stderr", t->dir);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fd = open(errpath, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		UNIT_FAIL("%s: capture stderr: %s", unit_name(), strerror(errno));
		if (saved >= 0)
			close(saved);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	ret = rules_file(path, &v, n, "rule");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	len = pread(fd, t->err, sizeof(t->err) - 1, 0);
	t->err[len > 0 ? len : 0] = '\0';
	close(fd);
	if (first && v && *n)
		*first = v[0];
	free(v);
	return ret;
}

UNIT_TEST(rules_file)
{
	struct rule_spec r;
	struct tmp t;
	size_t n = 99;
	const char *p;

	if (tmp_open(&t))
		return;
	p = tmp_file(&t, "good",
		     "# rules for the test\n"
		     "\n"
		     "198.18.0.0/24 --allow   # trailing comment\n"
		     "   \t\n"
		     "\t2001:2::/48\t--layer 10/1s --layer 100/1m --shared\n"
		     "198.18.1.0/24 --deny\r\n"
		     "#198.18.2.0/24 --allow\n"
		     "198.18.3.0/24 --deny"); /* no newline at the end */
	ASSERT_EQ(rules(&t, p, &n, &r), 0, "rules_file: comments, blank lines, CRLF are read");
	ASSERT_EQ(n, 4, "rules_file: four rules, the commented-out one not among them");
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_ALLOW, "rules_file: the first rule is --allow");
	ASSERT_EQ(r.line, 3, "rules_file: the first rule is on line 3");
	ASSERT_STREQ(t.err, "", "rules_file: nothing on stderr for a good file");

	p = tmp_file(&t, "empty", "");
	ASSERT_EQ(rules(&t, p, &n, NULL), 0, "rules_file: an empty file is read");
	ASSERT_EQ(n, 0, "rules_file: an empty file has no rules");
	p = tmp_file(&t, "comments", "# nothing\n\n   # here\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), 0, "rules_file: a file of comments is read");
	ASSERT_EQ(n, 0, "rules_file: a file of comments has no rules");

	/* 16 words on a line are allowed (RULE_WORDS, with the command's name): the longest rule. */
	p = tmp_file(&t, "words16",
		     "198.18.0.0/24 --layer 1/1s --layer 2/2s --layer 3/3s --layer 4/4s "
		     "--ban 1h --proto tcp --dport 80 --syn\n");
	ASSERT_EQ(rules(&t, p, &n, &r), 0, "rules_file: 16 words on a line are allowed");
	ASSERT_EQ(r.rule.ban_ns, 3600 * SEC_NS, "rules_file: ... --ban among them");
	tmp_close(&t);
}

UNIT_TEST(rules_file_errors)
{
	char line[1200];
	struct tmp t;
	size_t n;
	const char *p;

	if (tmp_open(&t))
		return;
	p = tmp_file(&t, "bad",
		     "198.18.0.0/24 --allow\n# fine so far\n198.18.1.0/24 --bogus\n"
		     "198.18.2.0/24 --deny\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE, "rules_file: a bad line is a usage error");
	ASSERT_STRSTR(t.err, "/bad:3: unknown option '--bogus'",
		      "rules_file: ... naming the file, the line by number, and why");

	p = tmp_file(&t, "dup",
		     "198.18.0.0/24 --allow\n2001:2::/48 --allow\n"
		     "2001:0002:0000::/48 --deny\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: a second rule for a prefix is a usage error");
	ASSERT_STRSTR(t.err, "/dup:3: a second rule for the same prefix",
		      "rules_file: ... naming its line, however the prefix is spelled");

	p = tmp_file(&t, "words17",
		     "198.18.0.0/24 --layer 1/1s --shared --shared --shared "
		     "--shared --shared --shared --shared --shared --shared --shared --shared "
		     "--shared --shared --shared\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: 17 words on a line are a usage error");
	ASSERT_STRSTR(t.err, "/words17:1: too many words", "rules_file: ... saying so");
	p = tmp_file(&t, "shared-ban",
		     "198.18.0.0/24 --allow\n198.18.1.0/24 --layer 5/1s "
		     "--shared --ban 1m\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: --ban on a --shared rule is a usage error");
	ASSERT_STRSTR(t.err, "/shared-ban:2: a --shared budget is not banned",
		      "rules_file: ... naming its line");

	ASSERT_EQ(rules(&t, t.dir, &n, NULL), EXIT_USAGE, "rules_file: a folder is a usage error");
	ASSERT_STRSTR(t.err, "not a regular file", "rules_file: ... not a regular file");
	ASSERT_EQ(rules(&t, "/dev/null", &n, NULL), EXIT_USAGE,
		  "rules_file: a device is a usage error");
	ASSERT_STRSTR(t.err, "not a regular file", "rules_file: ... not a regular file either");
	snprintf(line, sizeof(line), "%s/missing", t.dir);
	ASSERT_EQ(rules(&t, line, &n, NULL), EXIT_USAGE,
		  "rules_file: a file that does not exist is a usage error");
	ASSERT_STRSTR(t.err, "No such file or directory", "rules_file: ... saying so");

	/* A line of 1022 characters and its newline fit the 1024-byte buffer; 1023 do not. */
	memset(line, '#', sizeof(line));
	memcpy(line, "198.18.0.0/24 --allow ", 22);
	strcpy(line + 1022, "\n");
	p = tmp_file(&t, "long1022", line);
	ASSERT_EQ(rules(&t, p, &n, NULL), 0, "rules_file: a line of 1022 characters is read");
	memset(line + 1022, '#', 1);
	strcpy(line + 1023, "\n198.18.1.0/24 --deny\n");
	p = tmp_file(&t, "long1023", line);
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: a line of 1023 characters is a usage error");
	ASSERT_STRSTR(t.err, "/long1023:1: line too long", "rules_file: ... naming its line");
	line[1023] = '\0';
	p = tmp_file(&t, "long1023eof", line);
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: a last line of 1023 characters without a newline too");
	tmp_close(&t);
}

/* --rate N/DUR [--burst B]: the rule's one limit, a rate; formatted back the same; refused with a reason. */
UNIT_TEST(rule_parse_rate)
{
	static const struct {
		const char *w[6];
		const char *why;
	} bad[] = {
		{ { "198.18.0.0/24", "--rate", "5/1s", "--layer", "5/1s" },
		  "give either --rate or --layer, not both" },
		{ { "198.18.0.0/24", "--layer", "5/1s", "--burst", "5" },
		  "--burst goes with --rate N/DUR" },
		{ { "198.18.0.0/24", "--allow", "--rate", "5/1s" },
		  "give exactly one of --allow, --deny, --layer N/DUR or --rate N/DUR" },
		{ { "198.18.0.0/24", "--rate", "5/1s", "--burst", "0" }, "invalid --burst '0'" },
		{ { "198.18.0.0/24", "--rate", "5" }, "invalid --rate '5': needs the form N/DUR" },
		{ { "198.18.0.0/24", "--rate", "1/1h" }, "is slower than the slowest rate" },
		{ { "198.18.0.0/24", "--rate", "1/1s", "--rate", "2/1s" },
		  "option '--rate' given twice" },
		{ { "198.18.0.0/24", "--rate", "1/1s", "--shared", "--ban", "1m" },
		  "a --shared budget is not banned" },
	};
	struct rule_spec r, back;
	char why[256], text[RULE_TEXT_MAX], *argv[12];
	size_t i;
	int argc;

	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--rate", "100/1s"), 0,
		  "rule_parse_rate: --rate 100/1s (%s)", why);
	ASSERT_EQ(r.rule.action, XDP_RL_RULE_LIMIT, "rule_parse_rate: a limit");
	ASSERT_EQ(r.rule.nlayers, 1, "rule_parse_rate: ... of one layer");
	ASSERT_TRUE(xdp_rl_is_rate(&r.rule.layer[0]), "rule_parse_rate: ... a rate");
	ASSERT_EQ(r.rule.layer[0].burst, 100, "rule_parse_rate: ... its burst N by default");
	rule_format(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 --rate 100/1s --burst 100",
		     "rule_parse_rate: formatted with its burst");
	rule_describe(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 rate 100/1s burst 100", "rule_parse_rate: described");

	ASSERT_EQ(PARSE_RULE(&r, why, "--ban", "1m", "198.18.0.0/24", "--burst", "7", "--rate",
			     "3/1s"),
		  0, "rule_parse_rate: options in any order (%s)", why);
	ASSERT_EQ(r.rule.layer[0].burst, 7, "rule_parse_rate: --burst 7");
	ASSERT_EQ(r.rule.layer[0].tau_ns, 7 * SEC_NS / 3,
		  "rule_parse_rate: ... 7/3 s to earn back");
	rule_format(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 --rate 3/1s --burst 7 --ban 1m",
		     "rule_parse_rate: formatted in rule_opts' order");
	/* Formatted, parsed back: the same rule. */
	argv[0] = "rule";
	argv[1] = strtok(text, " ");
	for (argc = 1; argc < 11 && argv[argc]; argc++)
		argv[argc + 1] = strtok(NULL, " ");
	ASSERT_EQ(rule_parse(argc, argv, &back, why, sizeof(why)), 0,
		  "rule_parse_rate: its text parses (%s)", why);
	ASSERT_TRUE(rule_same(&r, &back), "rule_parse_rate: ... as the same rule");
	ASSERT_EQ(memcmp(&r.rule, &back.rule, sizeof(r.rule)), 0,
		  "rule_parse_rate: ... every field of it");

	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--rate", "10/1s", "--shared"), 0,
		  "rule_parse_rate: a shared rate (%s)", why);
	rule_describe(&r, text, sizeof(text));
	ASSERT_STREQ(text, "198.18.0.0/24 rate 10/1s burst 10 shared",
		     "rule_parse_rate: ... described");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (argc = 1; argc <= 6 && bad[i].w[argc - 1]; argc++)
			argv[argc] = (char *)bad[i].w[argc - 1];
		argv[0] = "rule";
		argv[argc] = NULL;
		ASSERT_EQ(rule_parse(argc, argv, &r, why, sizeof(why)), -1,
			  "rule_parse_rate refuses: %s", bad[i].why);
		ASSERT_STRSTR(why, bad[i].why, "rule_parse_rate: ... saying so");
	}
}
