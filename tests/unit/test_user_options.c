// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_options.c - the option parsers of user/lib/options.h: numbers,
 * durations, addresses, layers, prefixes, and words. No root, no kernel;
 * built into build/test_user.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

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

/* Three, two and one words, as the option tables have them. */
static const struct word three[] = {
	{ "pass", 0 },
	{ "drop", 1 },
	{ "aggregate", 7 },
	{ NULL, 0 },
};
static const struct word two[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
static const struct word one[] = { { "only", 3 }, { NULL, 0 } };

UNIT_TEST(word_parse)
{
	unsigned int v = 99;

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
}

UNIT_TEST(word_name)
{
	ASSERT_STREQ(word_name(three, 1), "drop", "word_name: 1 is \"drop\"");
	ASSERT_STREQ(word_name(three, 7), "aggregate", "word_name: 7 is \"aggregate\"");
	ASSERT_STREQ(word_name(three, 2), "?", "word_name: a value with no word is \"?\"");
	ASSERT_STREQ(word_name(rule_action_words, XDP_RL_RULE_DENY), "deny",
		     "word_name: the rule actions' table names deny");
}

UNIT_TEST(word_list)
{
	char buf[64];

	word_list(three, buf, sizeof(buf));
	ASSERT_STREQ(buf, "pass, drop or aggregate", "word_list: three words");
	word_list(two, buf, sizeof(buf));
	ASSERT_STREQ(buf, "on or off", "word_list: two words");
	word_list(one, buf, sizeof(buf));
	ASSERT_STREQ(buf, "only", "word_list: one word");
	word_list(three, buf, 8);
	ASSERT_STREQ(buf, "pass, d", "word_list: cut to the buffer, still terminated");
}
