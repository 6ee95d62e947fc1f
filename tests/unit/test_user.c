// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user.c - user-space code alone, no root and no kernel: the option
 * parsers (user/lib/options.h), the rules parser (user/rules.h: rule_parse and
 * rules_file, on files in a folder of its own under $TMPDIR), the config
 * file (user/config.h: parsed and printed), and the JSON writer (user/lib/json.h,
 * into memory). Built as build/test_user.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "options.h"
#include "rules.h"
#include "unit.h"

#define SEC_NS 1000000000ULL

/* ---- parse_u64 ------------------------------------------------------------- */

UNIT_TEST(parse_u64)
{
	__u64 v = 7;

	ASSERT_STREQ(parse_u64("80", 0, 100, &v), NULL, "parse_u64: \"80\" is accepted");
	ASSERT_EQ(v, 80, "parse_u64: \"80\" is 80");
	v = 7;
	ASSERT_STREQ(parse_u64("80abc", 0, 100, &v), "not a number",
		     "parse_u64: \"80abc\" is not a number");
	ASSERT_EQ(v, 7, "parse_u64: a refused value leaves the result alone");
	ASSERT_STREQ(parse_u64("", 0, 100, &v), "empty value", "parse_u64: \"\" is empty");
	ASSERT_STREQ(parse_u64(NULL, 0, 100, &v), "empty value", "parse_u64: NULL is empty");
	ASSERT_STREQ(parse_u64("-1", 0, 100, &v), "must not be negative",
		     "parse_u64: \"-1\" is negative");
	ASSERT_STREQ(parse_u64("+1", 0, 100, &v), "not a number", "parse_u64: \"+1\": no sign");
	ASSERT_STREQ(parse_u64(" 1", 0, 100, &v), "not a number",
		     "parse_u64: \" 1\": no leading space");
	ASSERT_STREQ(parse_u64("1 ", 0, 100, &v), "not a number",
		     "parse_u64: \"1 \": no trailing space");
	ASSERT_STREQ(parse_u64("0x10", 0, 100, &v), "not a number", "parse_u64: decimal only");
	ASSERT_STREQ(parse_u64("18446744073709551616", 0, ~0ULL, &v), "too large",
		     "parse_u64: 2^64 overflows");
	ASSERT_STREQ(parse_u64("18446744073709551615", 0, ~0ULL, &v), NULL,
		     "parse_u64: 2^64 - 1 is accepted");
	ASSERT_EQ(v, ~0ULL, "parse_u64: 2^64 - 1 is 18446744073709551615");
	ASSERT_STREQ(parse_u64("1", 1, 100, &v), NULL, "parse_u64: the minimum is in range");
	ASSERT_STREQ(parse_u64("100", 1, 100, &v), NULL, "parse_u64: the maximum is in range");
	ASSERT_STREQ(parse_u64("0", 1, 100, &v), "must be at least 1",
		     "parse_u64: 0 under a minimum of 1");
	ASSERT_STREQ(parse_u64("101", 1, 100, &v), "must be at most 100",
		     "parse_u64: one past the maximum");
	ASSERT_STREQ(parse_u64("4", 5, 100, &v), "must be at least 5",
		     "parse_u64: one under the minimum");
}

/* ---- parse_duration -------------------------------------------------------- */

UNIT_TEST(parse_duration)
{
	static const struct {
		const char *s;
		__u64 ns;
	} ok[] = {
		{ "1ms", 1000000ULL }, /* WINDOW_MIN_NS */
		{ "500ms", 500000000ULL },    { "1000us", 1000000ULL },
		{ "2000000ns", 2000000ULL },  { "1s", SEC_NS },
		{ "15m", 15 * 60 * SEC_NS },  { "2h", 2 * 3600 * SEC_NS },
		{ "8784h", WINDOW_MAX_NS },   { "366d", WINDOW_MAX_NS },
		{ "2d", 2 * 86400 * SEC_NS }, { "1.5s", 1500000000ULL },
		{ "0.25m", 15 * SEC_NS },     { "1.001s", 1001000000ULL },
		{ "2.5ms", 2500000ULL },      { "1.000000001s", 1000000001ULL },
	};
	static const char range[] = "out of range 1ms..366d";
	__u64 ns;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ns = 0;
		ASSERT_STREQ(parse_duration(ok[i].s, WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), NULL,
			     "parse_duration: \"%s\" is accepted", ok[i].s);
		ASSERT_EQ(ns, ok[i].ns, "parse_duration: \"%s\" is %llu ns", ok[i].s,
			  (unsigned long long)ok[i].ns);
	}
	ASSERT_STREQ(parse_duration("10", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     "needs a unit: ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_duration: a number without a unit is refused");
	ASSERT_STREQ(parse_duration("10w", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     "unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_duration: an unknown unit");
	ASSERT_STREQ(parse_duration("10 s", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     "unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_duration: no space before the unit");
	ASSERT_STREQ(parse_duration("1S", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     "unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_duration: units are lower case");
	ASSERT_STREQ(parse_duration("", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), "empty value",
		     "parse_duration: \"\" is empty");
	ASSERT_STREQ(parse_duration("ms", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), "not a number",
		     "parse_duration: a unit without a number");
	ASSERT_STREQ(parse_duration("-1s", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     "must not be negative", "parse_duration: \"-1s\" is negative");
	ASSERT_STREQ(parse_duration("999us", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), range,
		     "parse_duration: under the minimum");
	ASSERT_STREQ(parse_duration("0s", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), range,
		     "parse_duration: zero is under the minimum");
	ASSERT_STREQ(parse_duration("8785h", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), range,
		     "parse_duration: over the maximum");
	/* 5124096 h is 2^64 ns and 25 minutes more: it must not wrap to 25 minutes. */
	ASSERT_STREQ(parse_duration("5124096h", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), range,
		     "parse_duration: a product past 2^64 does not wrap into range");
	ASSERT_STREQ(parse_duration("18446744073709551615h", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns),
		     range, "parse_duration: 2^64 - 1 hours is out of range");
	ASSERT_STREQ(parse_duration("18446744073709551616ns", 0, ~0ULL, &ns), "too large",
		     "parse_duration: a number past 2^64 overflows");
	ASSERT_STREQ(parse_duration("1.5ns", 0, ~0ULL, &ns), "not a whole number of nanoseconds",
		     "parse_duration: a fraction of a nanosecond");
	ASSERT_STREQ(parse_duration("1.0000000001s", 0, ~0ULL, &ns),
		     "not a whole number of nanoseconds", "parse_duration: past nanoseconds");
	ASSERT_STREQ(parse_duration("1.s", 0, ~0ULL, &ns), "not a number",
		     "parse_duration: a point without digits");
	ASSERT_STREQ(parse_duration(".5s", 0, ~0ULL, &ns), "not a number",
		     "parse_duration: digits before the point");
	ASSERT_STREQ(parse_duration("1.5.5s", 0, ~0ULL, &ns),
		     "unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_duration: one point");
	ASSERT_STREQ(parse_duration("366.5d", WINDOW_MIN_NS, WINDOW_MAX_NS, &ns), range,
		     "parse_duration: a fraction past the maximum");
}

/* ---- parse_addr, parse_layer, parse_cidr --------------------------------------- */

UNIT_TEST(parse_addr)
{
	struct ip_addr a;
	__u8 v4[4] = { 198, 18, 0, 1 }, v6[16] = { 0x20, 0x01, 0, 2 };

	v6[15] = 1;
	ASSERT_STREQ(parse_addr("198.18.0.1", &a), NULL, "parse_addr: IPv4 is accepted");
	ASSERT_EQ(a.family, AF_INET, "parse_addr: 198.18.0.1 is IPv4");
	ASSERT_TRUE(!memcmp(a.bytes, v4, 4), "parse_addr: 198.18.0.1 in network order");
	ASSERT_STREQ(parse_addr("2001:2::1", &a), NULL, "parse_addr: IPv6 is accepted");
	ASSERT_EQ(a.family, AF_INET6, "parse_addr: 2001:2::1 is IPv6");
	ASSERT_TRUE(!memcmp(a.bytes, v6, 16), "parse_addr: 2001:2::1 in network order");
	ASSERT_STREQ(parse_addr("::ffff:198.18.0.1", &a), NULL,
		     "parse_addr: an IPv4-mapped IPv6 address is accepted");
	ASSERT_EQ(a.family, AF_INET6, "parse_addr: an IPv4-mapped address is IPv6");
	ASSERT_STREQ(parse_addr("", &a), "empty address", "parse_addr: \"\" is empty");
	ASSERT_STREQ(parse_addr(NULL, &a), "empty address", "parse_addr: NULL is empty");
	ASSERT_STREQ(parse_addr("198.18.0.256", &a), "not an IPv4 or IPv6 address",
		     "parse_addr: an octet past 255");
	ASSERT_STREQ(parse_addr("198.18.0.1 ", &a), "not an IPv4 or IPv6 address",
		     "parse_addr: a trailing space");
	ASSERT_STREQ(parse_addr("198.18.0.0/24", &a), "not an IPv4 or IPv6 address",
		     "parse_addr: a prefix is not an address");
	ASSERT_STREQ(parse_addr("2001:2:::1", &a), "not an IPv4 or IPv6 address",
		     "parse_addr: three colons");
}

UNIT_TEST(parse_layer)
{
	struct xdp_rl_layer l = {};

	ASSERT_STREQ(parse_layer("100/1s", &l), NULL, "parse_layer: \"100/1s\" is accepted");
	ASSERT_EQ(l.limit, 100, "parse_layer: \"100/1s\": limit 100");
	ASSERT_EQ(l.window_ns, SEC_NS, "parse_layer: \"100/1s\": window 1s");
	ASSERT_STREQ(parse_layer("100", &l), "needs the form N/DUR, e.g. 100/1s",
		     "parse_layer: a limit without a window");
	ASSERT_STREQ(parse_layer(NULL, &l), "needs the form N/DUR, e.g. 100/1s",
		     "parse_layer: NULL");
	ASSERT_STREQ(parse_layer("0/1s", &l), "limit '0': must be at least 1",
		     "parse_layer: a limit of 0");
	ASSERT_STREQ(parse_layer("/1s", &l), "limit '': empty value", "parse_layer: no limit");
	ASSERT_STREQ(parse_layer("10x/1s", &l), "limit '10x': not a number",
		     "parse_layer: a limit that is not a number");
	ASSERT_STREQ(parse_layer("100/1", &l),
		     "window '1': needs a unit: ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		     "parse_layer: a window without a unit");
	ASSERT_STREQ(parse_layer("100/", &l), "window '': empty value", "parse_layer: no window");
	ASSERT_STREQ(
		parse_layer("100/1s/2s", &l),
		"window '1s/2s': unknown unit: use ns, us, ms, s, m, h or d (e.g. 500ms, 1s, 1.5s)",
		"parse_layer: one slash only");
	ASSERT_STREQ(parse_layer("70368744177664/1s", &l), NULL,
		     "parse_layer: the largest limit (XDP_RL_LIMIT_MAX) is accepted");
	ASSERT_EQ(l.limit, XDP_RL_LIMIT_MAX, "parse_layer: the largest limit is 2^46");
	ASSERT_STREQ(parse_layer("70368744177665/1s", &l),
		     "limit '70368744177665': must be at most 70368744177664",
		     "parse_layer: one past the largest limit");
	ASSERT_STREQ(parse_layer("1234567890123456789012345678901234567890/1s", &l),
		     "limit too large", "parse_layer: a limit longer than any number");
}

UNIT_TEST(parse_cidr)
{
	struct ip_addr a;
	unsigned int len = 99;
	char s[64];

	ASSERT_STREQ(parse_cidr("198.18.0.0/24", &a, &len), NULL,
		     "parse_cidr: 198.18.0.0/24 is accepted");
	ASSERT_EQ(len, 24, "parse_cidr: 198.18.0.0/24 is a /24");
	fmt_prefix(&a, len, s, sizeof(s));
	ASSERT_STREQ(s, "198.18.0.0/24", "parse_cidr: 198.18.0.0/24 printed back");
	ASSERT_STREQ(parse_cidr("198.18.0.1", &a, &len), NULL,
		     "parse_cidr: a bare IPv4 address is accepted");
	ASSERT_EQ(len, 32, "parse_cidr: a bare IPv4 address is a /32");
	ASSERT_STREQ(parse_cidr("2001:2::1", &a, &len), NULL,
		     "parse_cidr: a bare IPv6 address is accepted");
	ASSERT_EQ(len, 128, "parse_cidr: a bare IPv6 address is a /128");
	ASSERT_STREQ(parse_cidr("2001:2::/48", &a, &len), NULL,
		     "parse_cidr: 2001:2::/48 is accepted");
	ASSERT_EQ(len, 48, "parse_cidr: 2001:2::/48 is a /48");
	ASSERT_STREQ(parse_cidr("0.0.0.0/0", &a, &len), NULL, "parse_cidr: /0 is accepted");
	ASSERT_EQ(len, 0, "parse_cidr: 0.0.0.0/0 is a /0");
	ASSERT_STREQ(parse_cidr("198.18.0.1/24", &a, &len),
		     "bits set past /24 (did you mean 198.18.0.0/24?)",
		     "parse_cidr: IPv4 bits past the length, and the prefix meant");
	ASSERT_STREQ(parse_cidr("198.18.0.128/25", &a, &len), NULL,
		     "parse_cidr: the last bit inside the length is allowed");
	ASSERT_STREQ(parse_cidr("2001:2::1/48", &a, &len),
		     "bits set past /48 (did you mean 2001:2::/48?)",
		     "parse_cidr: IPv6 bits past the length, and the prefix meant");
	ASSERT_STREQ(parse_cidr("198.18.0.0/33", &a, &len),
		     "prefix length '33': must be at most 32", "parse_cidr: IPv4 /33");
	ASSERT_STREQ(parse_cidr("2001:2::/129", &a, &len),
		     "prefix length '129': must be at most 128", "parse_cidr: IPv6 /129");
	ASSERT_STREQ(parse_cidr("198.18.0.0/", &a, &len), "prefix length '': empty value",
		     "parse_cidr: a slash without a length");
	ASSERT_STREQ(parse_cidr("198.18.0.0/-1", &a, &len),
		     "prefix length '-1': must not be negative", "parse_cidr: a negative length");
	ASSERT_STREQ(parse_cidr("", &a, &len), "empty prefix", "parse_cidr: \"\" is empty");
	ASSERT_STREQ(parse_cidr("example.com/24", &a, &len), "not an IPv4 or IPv6 address",
		     "parse_cidr: a name is not an address");
	ASSERT_STREQ(parse_cidr("1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa/64", &a, &len),
		     "not an IPv4 or IPv6 prefix", "parse_cidr: an address longer than any");
	/* No packet carries an IPv4-mapped address: a rule there would match nothing. */
	ASSERT_STREQ(parse_cidr("::ffff:198.18.5.1", &a, &len),
		     "an IPv4-mapped address, which no packet carries: write it as IPv4 "
		     "(198.18.5.1/32)",
		     "parse_cidr: an IPv4-mapped address is refused, with the IPv4 form");
	ASSERT_STREQ(parse_cidr("::ffff:198.18.5.0/120", &a, &len),
		     "an IPv4-mapped address, which no packet carries: write it as IPv4 "
		     "(198.18.5.0/24)",
		     "parse_cidr: ... and so is an IPv4-mapped prefix");
	ASSERT_STREQ(parse_cidr("::/64", &a, &len), NULL,
		     "parse_cidr: a prefix holding the mapped range is one packets carry");
}

/* ---- fmt_duration, words ------------------------------------------------------ */

UNIT_TEST(fmt_duration)
{
	static const struct {
		__u64 ns;
		const char *s;
	} cases[] = {
		{ 1, "1ns" },
		{ 999, "999ns" },
		{ 1000, "1us" },
		{ 1500000, "1500us" },
		{ 1000000, "1ms" },
		{ 1500000000ULL, "1500ms" },
		{ SEC_NS, "1s" },
		{ 90 * SEC_NS, "90s" },
		{ 60 * SEC_NS, "1m" },
		{ 90 * 60 * SEC_NS, "90m" },
		{ 3600 * SEC_NS, "1h" },
		{ WINDOW_MAX_NS, "366d" },
		{ ~0ULL, "18446744073709551615ns" },
	};
	char s[32];
	__u64 back;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fmt_duration(cases[i].ns, s, sizeof(s));
		ASSERT_STREQ(s, cases[i].s, "fmt_duration: %llu ns is %s, its shortest spelling",
			     (unsigned long long)cases[i].ns, cases[i].s);
		back = 0;
		ASSERT_STREQ(parse_duration(s, 1, ~0ULL, &back), NULL,
			     "fmt_duration: \"%s\" parses back", s);
		ASSERT_EQ(back, cases[i].ns, "fmt_duration: \"%s\" parses back to %llu ns", s,
			  (unsigned long long)cases[i].ns);
	}
}

UNIT_TEST(words)
{
	static const struct word three[] = {
		{ "pass", 0 },
		{ "drop", 1 },
		{ "aggregate", 7 },
		{ NULL, 0 },
	};
	static const struct word two[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
	static const struct word one[] = { { "only", 3 }, { NULL, 0 } };
	unsigned int v = 99;
	char buf[64];

	ASSERT_STREQ(word_parse(three, "aggregate", &v), NULL, "word_parse: a word is accepted");
	ASSERT_EQ(v, 7, "word_parse: \"aggregate\" stands for 7");
	ASSERT_STREQ(word_parse(three, "pass", &v), NULL, "word_parse: the first word");
	ASSERT_EQ(v, 0, "word_parse: \"pass\" stands for 0");
	v = 99;
	ASSERT_STREQ(word_parse(three, "Drop", &v), "use pass, drop or aggregate",
		     "word_parse: words are case-sensitive; the refusal lists them");
	ASSERT_EQ(v, 99, "word_parse: a refused word leaves the value alone");
	ASSERT_STREQ(word_parse(three, "", &v), "use pass, drop or aggregate",
		     "word_parse: \"\" is refused");
	ASSERT_STREQ(word_parse(three, NULL, &v), "use pass, drop or aggregate",
		     "word_parse: NULL is refused");
	ASSERT_STREQ(word_parse(three, "dro", &v), "use pass, drop or aggregate",
		     "word_parse: no abbreviations");
	ASSERT_STREQ(word_name(three, 1), "drop", "word_name: 1 is \"drop\"");
	ASSERT_STREQ(word_name(three, 7), "aggregate", "word_name: 7 is \"aggregate\"");
	ASSERT_STREQ(word_name(three, 2), "?", "word_name: a value with no word is \"?\"");
	word_list(three, buf, sizeof(buf));
	ASSERT_STREQ(buf, "pass, drop or aggregate", "word_list: three words");
	word_list(two, buf, sizeof(buf));
	ASSERT_STREQ(buf, "on or off", "word_list: two words");
	word_list(one, buf, sizeof(buf));
	ASSERT_STREQ(buf, "only", "word_list: one word");
	word_list(three, buf, 8);
	ASSERT_STREQ(buf, "pass, d", "word_list: cut to the buffer, still terminated");
	ASSERT_STREQ(word_name(rule_action_words, XDP_RL_RULE_DENY), "deny",
		     "word_name: the rule actions' table names deny");
}

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
	ASSERT_STREQ(why, "give exactly one of --allow, --deny or --layer N/DUR",
		     "rule_parse: ... saying which to give");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--deny"), -1,
		  "rule_parse: --allow with --deny is refused");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--layer", "1/1s"), -1,
		  "rule_parse: --allow with --layer is refused");
	ASSERT_EQ(PARSE_RULE(&r, why, "198.18.0.0/24", "--allow", "--shared"), -1,
		  "rule_parse: --shared without --layer is refused");
	ASSERT_STREQ(why, "--shared goes with --layer", "rule_parse: ... saying so");
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

	/* 15 words on a line are allowed (RULE_WORDS, with the command's name). */
	p = tmp_file(&t, "words15",
		     "198.18.0.0/24 --layer 1/1s --layer 2/2s --layer 3/3s --layer 4/4s "
		     "--shared --proto tcp --dport 80 --syn\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), 0, "rules_file: 15 words on a line are allowed");
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

	p = tmp_file(&t, "words16",
		     "198.18.0.0/24 --layer 1/1s --shared --shared --shared "
		     "--shared --shared --shared --shared --shared --shared --shared --shared "
		     "--shared --shared\n");
	ASSERT_EQ(rules(&t, p, &n, NULL), EXIT_USAGE,
		  "rules_file: 16 words on a line are a usage error");
	ASSERT_STRSTR(t.err, "/words16:1: too many words", "rules_file: ... saying so");

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

/* ---- JSON ------------------------------------------------------------------ */

/* A FILE writing to memory. */
struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	if (!m->f)
		UNIT_FAIL("%s: open_memstream: %s", unit_name(), strerror(errno));
	return m->f;
}

/* What was written; the caller frees it. */
static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

/* @s as json_put_string writes it (in a buffer of its own, to free). */
static char *jstr(const char *s)
{
	struct mem m;

	if (!mem_open(&m))
		return NULL;
	json_put_string(m.f, s);
	return mem_close(&m);
}

/* Assert json_put_string(@in) writes @out (quotes included). */
#define ASSERT_JSTR(in, out, ...)                   \
	do {                                        \
		char *_s = jstr(in);                \
		ASSERT_STREQ(_s, out, __VA_ARGS__); \
		free(_s);                           \
	} while (0)

UNIT_TEST(json_strings)
{
	ASSERT_JSTR("eth0", "\"eth0\"", "json: a plain string in quotes");
	ASSERT_JSTR("", "\"\"", "json: the empty string");
	ASSERT_JSTR("a\"b", "\"a\\\"b\"", "json: a quote is escaped");
	ASSERT_JSTR("a\\b", "\"a\\\\b\"", "json: a backslash is escaped");
	ASSERT_JSTR("\x01\t\n\r\x1f", "\"\\u0001\\u0009\\u000a\\u000d\\u001f\"",
		    "json: control characters are \\u escapes");
	ASSERT_JSTR(" ~\x7f", "\" ~\x7f\"", "json: DEL and printable ASCII pass as they are");
	ASSERT_JSTR("/", "\"/\"", "json: a slash needs no escape");
}

UNIT_TEST(json_utf8)
{
	ASSERT_JSTR("caf\xc3\xa9", "\"caf\xc3\xa9\"", "json: 2-byte UTF-8 (U+00E9) passes");
	ASSERT_JSTR("\xe2\x82\xac", "\"\xe2\x82\xac\"", "json: 3-byte UTF-8 (U+20AC) passes");
	ASSERT_JSTR("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"",
		    "json: 4-byte UTF-8 (U+1F600) passes");
	ASSERT_JSTR("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"",
		    "json: the last code point (U+10FFFF) passes");
	ASSERT_JSTR("\xef\xbf\xbd", "\"\xef\xbf\xbd\"", "json: U+FFFD itself passes");
	ASSERT_JSTR("\x80", "\"\\ufffd\"", "json: a lone continuation byte 0x80 is U+FFFD");
	ASSERT_JSTR("\xff", "\"\\ufffd\"", "json: 0xff, never UTF-8, is U+FFFD");
	ASSERT_JSTR("a\xfe"
		    "b",
		    "\"a\\ufffdb\"", "json: a bad byte between good ones");
	ASSERT_JSTR("\xc0\xaf", "\"\\ufffd\\ufffd\"",
		    "json: overlong 0xc0 0xaf ('/'): each byte U+FFFD");
	ASSERT_JSTR("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"",
		    "json: overlong 3-byte 0xe0 0x80 0xaf: each byte U+FFFD");
	ASSERT_JSTR("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"",
		    "json: surrogate 0xed 0xa0 0x80 (U+D800): each byte U+FFFD");
	ASSERT_JSTR("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
		    "json: past U+10FFFF: each byte U+FFFD");
	ASSERT_JSTR("\xe2\x82", "\"\\ufffd\\ufffd\"",
		    "json: a sequence cut by the end of the string, not read past it");
	ASSERT_JSTR("\xe2\x82"
		    "b",
		    "\"\\ufffd\\ufffdb\"", "json: a sequence cut by an ASCII byte, which is kept");
}

UNIT_TEST(json_writer)
{
	struct json j;
	struct mem m;
	char *s;

	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_str(&j, "name", "eth0");
	json_u64(&j, "max", ~0ULL);
	json_s64(&j, "min", -9223372036854775807LL - 1);
	json_bool(&j, "yes", 1);
	json_bool(&j, "no", 0);
	json_null(&j, "none");
	json_arr(&j, "list");
	json_u64(&j, NULL, 1);
	json_str(&j, NULL, "two");
	json_obj(&j, NULL);
	json_end(&j);
	json_arr(&j, NULL);
	json_end(&j);
	json_end(&j);
	json_str(&j, "k\"ey", "v\n");
	json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: a whole document finishes");
	s = mem_close(&m);
	ASSERT_STREQ(s,
		     "{\"name\":\"eth0\",\"max\":18446744073709551615,"
		     "\"min\":-9223372036854775808,\"yes\":true,\"no\":false,\"none\":null,"
		     "\"list\":[1,\"two\",{},[]],\"k\\\"ey\":\"v\\u000a\"}\n",
		     "json: members, commas, nesting and escaped keys, exactly");
	free(s);

	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	ASSERT_EQ(json_finish(&j), 0, "json: an empty document finishes");
	s = mem_close(&m);
	ASSERT_STREQ(s, "\n", "json: an empty document is a newline");
	free(s);
}

UNIT_TEST(json_nesting)
{
	char want[2 * JSON_MAX_DEPTH + 2];
	struct json j;
	struct mem m;
	char *s;
	int i;

	/* Left open. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_u64(&j, "a", 1);
	ASSERT_EQ(json_finish(&j), -1, "json: an object left open fails json_finish");
	s = mem_close(&m);
	ASSERT_STREQ(s, "{\"a\":1\n", "json: ... after writing what it was given");
	free(s);

	/* Closed once too often. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_arr(&j, NULL);
	json_end(&j);
	json_end(&j);
	ASSERT_EQ(json_finish(&j), -1, "json: closed once too often fails json_finish");
	s = mem_close(&m);
	ASSERT_STREQ(s, "[]\n", "json: ... and the extra close writes nothing");
	free(s);

	/* As deep as allowed: JSON_MAX_DEPTH - 1 levels. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	for (i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_arr(&j, NULL);
	for (i = 0; i < JSON_MAX_DEPTH - 1; i++)
		json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: %d levels of nesting finish", JSON_MAX_DEPTH - 1);
	s = mem_close(&m);
	memset(want, '[', JSON_MAX_DEPTH - 1);
	memset(want + JSON_MAX_DEPTH - 1, ']', JSON_MAX_DEPTH - 1);
	strcpy(want + 2 * (JSON_MAX_DEPTH - 1), "\n");
	ASSERT_STREQ(s, want, "json: ... written in full");
	free(s);

	/* One deeper: refused, not capped. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr(&j, NULL);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_end(&j);
	ASSERT_EQ(json_finish(&j), -1, "json: %d levels of nesting (JSON_MAX_DEPTH) fail",
		  JSON_MAX_DEPTH);
	free(mem_close(&m));

	/* json_begin starts afresh after a failure. */
	if (!mem_open(&m))
		return;
	json_begin(&j, m.f);
	json_end(&j);
	json_begin(&j, m.f);
	json_obj(&j, NULL);
	json_end(&j);
	ASSERT_EQ(json_finish(&j), 0, "json: json_begin forgets an earlier misuse");
	free(mem_close(&m));
}

/* ---- config files (user/config.h) ----------------------------------------- */

/* config_parse of @text as the file @name: 0 or -1, why in @why. */
static int config(const char *text, const char *name, struct config *c, char *why, size_t len)
{
	why[0] = '\0';
	return config_parse(text, strlen(text), name, c, why, len);
}

UNIT_TEST(config_parse)
{
	struct config c;
	char why[512];

	ASSERT_EQ(config("# a limiter\r\n"
			 "\n"
			 "  interface\teth0   # its interface\n"
			 "layer 2000/1s\n"
			 "layer 3000/1m\r\n"
			 "aligned\n"
			 "dry-run\n"
			 "new-sources 2000/1s\n"
			 "on-table-full aggregate\n"
			 "proto tcp\n"
			 "dport 80,443,8000-8100\n"
			 "syn\n"
			 "link-local exempt\n"
			 "bytes\n"
			 "v4-prefix 24\n"
			 "v6-prefix 48\n"
			 "max-sources 4096\n"
			 "max-layers 3\n"
			 "mode generic\n"
			 "rule 2001:2::/48 --deny\n"
			 "rule 198.18.1.0/24 --layer 10000/1s --shared\n"
			 "rule 198.18.0.0/24 --allow",
			 "x.conf", &c, why, sizeof(why)),
		  0, "config_parse: every setting, comments, blank lines, CRLF, tabs");
	ASSERT_STREQ(why, "", "config_parse: ... and nothing to say");
	ASSERT_STREQ(c.ifname, "eth0", "config_parse: the interface line names it");
	ASSERT_EQ(c.s.live.nlayers, 2, "config_parse: two layer lines are two layers");
	ASSERT_EQ(c.s.live.layer[1].limit, 3000, "config_parse: the second layer's limit");
	ASSERT_EQ(c.s.live.layer[1].window_ns, 60 * SEC_NS, "config_parse: its window");
	ASSERT_EQ(c.s.live.flags & (XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN),
		  XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN, "config_parse: aligned and dry-run");
	ASSERT_EQ(c.s.live.new_sources.limit, 2000, "config_parse: new-sources");
	ASSERT_EQ(c.s.live.on_full, XDP_RL_FULL_AGGREGATE, "config_parse: on-table-full");
	ASSERT_EQ(c.s.live.select.nports, 3, "config_parse: three ports and ranges");
	ASSERT_EQ(c.s.live.select.syn, 1, "config_parse: syn");
	ASSERT_EQ(c.s.live.link_local, XDP_RL_LL_EXEMPT, "config_parse: link-local");
	ASSERT_EQ(c.s.fixed.bytes, 1, "config_parse: bytes");
	ASSERT_EQ(c.s.fixed.v4_prefix, 24, "config_parse: v4-prefix");
	ASSERT_EQ(c.s.fixed.v6_prefix, 48, "config_parse: v6-prefix");
	ASSERT_EQ(c.s.fixed.max_sources, 4096, "config_parse: max-sources");
	ASSERT_EQ(c.s.fixed.max_layers, 3, "config_parse: max-layers");
	ASSERT_EQ(c.s.nrules, 3, "config_parse: three rules");
	ASSERT_EQ(c.s.rules[0].rule.action, XDP_RL_RULE_ALLOW,
		  "config_parse: the rules sorted, IPv4 by address first");
	ASSERT_EQ(c.s.rules[0].line, 22, "config_parse: ... each with its line");
	ASSERT_EQ(c.s.rules[2].rule.action, XDP_RL_RULE_DENY, "config_parse: IPv6 last");
	config_free(&c);

	ASSERT_EQ(config("", "/etc/xdp-rl/veth0.conf", &c, why, sizeof(why)), -1,
		  "config_parse: an empty file is refused (it would delete every rule)");
	ASSERT_STRSTR(why, "no settings and no rules", "config_parse: ... saying so");
	config_free(&c);
	ASSERT_EQ(config("# truncated\n\n", "/etc/xdp-rl/veth0.conf", &c, why, sizeof(why)), -1,
		  "config_parse: so is a file of comments");
	config_free(&c);
	ASSERT_EQ(config("interface veth0\n", "/etc/xdp-rl/veth0.conf", &c, why, sizeof(why)), 0,
		  "config_parse: a file of one line is a limiter of load's defaults");
	ASSERT_STREQ(c.ifname, "veth0", "config_parse: ... on the interface its file names");
	ASSERT_EQ(c.s.live.nlayers, 1, "config_parse: one layer by default");
	ASSERT_EQ(c.s.live.layer[0].limit, 1000, "config_parse: of 1000");
	ASSERT_EQ(c.s.live.layer[0].window_ns, SEC_NS, "config_parse: per 1s");
	ASSERT_EQ(c.s.fixed.max_sources, 262144, "config_parse: 262144 sources");
	ASSERT_EQ(c.s.fixed.max_layers, 1, "config_parse: room for the one layer");
	config_free(&c);

	ASSERT_EQ(config("rule 198.18.0.0/24 --layer 1/1s --layer 2/1m --layer 3/1h\n", "a.conf",
			 &c, why, sizeof(why)),
		  0, "config_parse: a rule with three layers");
	ASSERT_EQ(c.s.fixed.max_layers, 3, "config_parse: ... makes room for three layers");
	config_free(&c);
	ASSERT_EQ(config("enforce\nno-syn\nnew-sources off\nproto any\ndport any\n", "a.conf", &c,
			 why, sizeof(why)),
		  0, "config_parse: set's words for the defaults, explicit");
	ASSERT_EQ(xdp_rl_select_all(&c.s.live.select), 1, "config_parse: ... select every packet");
	config_free(&c);
}

/* Parse @text, print it, parse and print that: the two prints are the same. */
static void round_trip(const char *text, const char *what)
{
	char why[512], *a = NULL, *b = NULL;
	struct config c, d;
	size_t la, lb;

	if (!ASSERT_EQ(config(text, "rt.conf", &c, why, sizeof(why)), 0, "%s: parsed (%s)", what,
		       why))
		goto out;
	a = config_text(&c, &la);
	if (!ASSERT_EQ(config(a, "rt.conf", &d, why, sizeof(why)), 0, "%s: printed, parsed (%s)",
		       what, why))
		goto out;
	b = config_text(&d, &lb);
	ASSERT_STREQ(a, b, "%s: printed, parsed and printed again: the same", what);
	config_free(&d);
out:
	config_free(&c);
	free(a);
	free(b);
}

UNIT_TEST(config_print)
{
	struct config c;
	char why[512], *t;
	size_t len;

	round_trip("interface rt\n", "config_print: load's defaults");
	round_trip("limit 7\nwindow 60s\n", "config_print: one layer");
	round_trip("layer 2000/1s\nlayer 3000/60s\naligned\ndry-run\nnew-sources 5/1ms\n"
		   "on-table-full drop\nproto udp\ndport 53,5353-5354\nlink-local prefix\n"
		   "bytes\nv4-prefix 0\nv6-prefix 128\nmax-sources 16\nmax-layers 4\n"
		   "table lru\nmode generic\nrule 2001:2::1 --layer 1/1s --layer 2/2s --layer 3/3s "
		   "--layer 4/366d --proto tcp --dport 1-65535 --syn\n"
		   "rule 0.0.0.0/0 --deny --proto icmp\nrule ::/0 --allow --proto icmpv6\n",
		   "config_print: every setting and kind of rule");

	ASSERT_EQ(config("interface lo\nlimit 5\nwindow 60s\n", "a.conf", &c, why, sizeof(why)), 0,
		  "config_print: a limit of 5 per 60s");
	t = config_text(&c, &len);
	ASSERT_STRSTR(t,
		      "\nlimit 5\nwindow 1m\nper-key\nenforce\nnew-sources off\nproto any\n"
		      "dport any\nno-syn\nlink-local per-address\n",
		      "config_print: every setting explicit, durations at their shortest");
	ASSERT_STRSTR(t,
		      "\nv4-prefix 32\nv6-prefix 64\nmax-sources 262144\nmax-layers 1\n"
		      "table buckets\nmode native\n",
		      "config_print: ... the tables' settings too");
	free(t);
	config_free(&c);
}

UNIT_TEST(config_errors)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "limit 5\nlimt 6\n", "e.conf:2: unknown setting 'limt' (did you mean 'limit'?)" },
		{ "--limit 5\n",
		  "e.conf:1: unknown setting '--limit': write it without its dashes" },
		{ "bogus\n", "e.conf:1: unknown setting 'bogus' (a setting is an option of" },
		{ "force\n", "e.conf:1: 'force' is no setting" },
		{ "rules /etc/x.rules\n", "e.conf:1: 'rules' is no setting" },
		{ "limit\n", "e.conf:1: 'limit' takes a value: limit N" },
		{ "limit 5 6\n", "e.conf:1: 'limit' takes one value: limit N" },
		{ "aligned yes\n", "e.conf:1: 'aligned' takes no value" },
		{ "limit 0\n", "e.conf:1: invalid limit '0': must be at least 1" },
		{ "window 1\n", "e.conf:1: invalid window '1': needs a unit" },
		{ "limit 5\nlimit 6\n", "e.conf:2: a second 'limit' (line 1 has one)" },
		{ "dry-run\n\nenforce\n", "e.conf:3: dry-run and enforce exclude each other" },
		{ "layer 1/1s\n#\nwindow 1s\n", "e.conf:3: give either limit/window or layer" },
		{ "syn\nproto udp\n", "e.conf:2: syn is TCP's: it goes with proto tcp" },
		{ "on-table-full drop\n", "e.conf:1: on-table-full needs new-sources N/DUR" },
		{ "bytes\nlimit 59\n", "e.conf:2: a limit of 59 bytes can never pass a frame" },
		{ "max-layers 1\nlayer 1/1s\nlayer 2/1s\n",
		  "e.conf:1: max-layers 1 is less than the 2 layers asked for" },
		{ "max-layers 1\n\nrule 198.18.0.0/24 --layer 1/1s --layer 2/1m\n",
		  "e.conf:3: the rule has 2 layers, more than max-layers 1" },
		{ "rule 198.18.0.0/24\n", "e.conf:1: rule: give exactly one of --allow, --deny" },
		{ "rule 198.18.0.0/24 --allow\nrule 198.18.0.0/24 --deny\n",
		  "e.conf:2: a second rule for 198.18.0.0/24 (line 1 has one)" },
		{ "interface a\ninterface b\n", "e.conf:2: a second 'interface' (line 1 has one)" },
		{ "interface a/b\n", "e.conf:1: invalid interface 'a/b': holds '/', ':', a space" },
		{ "interface a\vb\n",
		  "e.conf:1: invalid interface 'a\vb': holds '/', ':', a space" },
		{ "interface abcdefghijklmnop\n", "longer than 15 characters" },
		{ "interface\n", "e.conf:1: 'interface' takes one value" },
		{ "limit 5\0\n", "e.conf:1: a NUL byte in the line" },
	};
	struct config c;
	char why[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* The NUL case is the only one that needs its length. */
		size_t len = strstr(bad[i].why, "NUL") ? 9 : strlen(bad[i].text);

		why[0] = '\0';
		ASSERT_EQ(config_parse(bad[i].text, len, "e.conf", &c, why, sizeof(why)), -1,
			  "config_parse refuses: %s", bad[i].why);
		ASSERT_STRSTR(why, bad[i].why, "config_parse: ... saying so");
		config_free(&c);
	}
	ASSERT_EQ(config("limit 5\n", "e.txt", &c, why, sizeof(why)), -1,
		  "config_parse: no interface line, and a file not named IFACE.conf");
	ASSERT_STRSTR(why, "e.txt: no interface: add a line 'interface IFACE'",
		      "config_parse: ... says how to name it");
	config_free(&c);
}

/*
 * settings_words (what `help --options` and the completion offer): each
 * entry names an option of load that takes a value, and every word of it
 * is a value settings_option accepts for that option.
 */
UNIT_TEST(settings_words)
{
	const struct opt_words *ow;
	const struct opt_spec *o;
	const struct word *w;
	struct settings s;
	struct why why;

	for (ow = settings_words; ow->opt; ow++) {
		o = opt_find(settings_load_opts, ow->opt);
		if (!ASSERT_TRUE(o && o->arg,
				 "settings_words: --%s is an option of load with a value", ow->opt))
			continue;
		for (w = ow->words; w->name; w++) {
			settings_init(&s);
			ASSERT_EQ(settings_option(o->id, w->name, &s, &why), 0,
				  "settings_words: --%s %s is accepted", ow->opt, w->name);
		}
	}
}
