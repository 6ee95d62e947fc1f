// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_options.c - the option parsers (user/lib/options.h): parse_u64,
 * parse_duration, parse_addr, parse_layer, parse_cidr, parse_ports,
 * word_parse, and lines_next. The first byte picks the parser (and the
 * bounds of parse_u64), the rest is the text. Any text is taken or refused
 * with a reason, never a crash; what is taken, printed as xdp-rl prints it
 * (fmt_duration, fmt_prefix, fmt_ports, a word's name), is taken again as
 * the same value.
 */
#include <arpa/inet.h>
#include <inttypes.h>

#include "fuzz.h"
#include "live.h"
#include "options.h"
#include "settings.h"

static const struct word *const word_tables[] = { proto_words, on_full_words, link_local_words,
						  mode_words,  key_words,     table_words };
#define NWORD_TABLES (sizeof(word_tables) / sizeof(word_tables[0]))

static void check_u64(const char *s, uint8_t pick)
{
	static const __u64 bounds[][2] = {
		{ 0, ~0ULL }, { 1, XDP_RL_LIMIT_MAX }, { 0, 128 }, { 16, 1ULL << 26 }
	};
	const __u64 *b = bounds[pick % 4];
	__u64 v = 0, w = 0;
	char buf[32];

	if (parse_u64(s, b[0], b[1], &v))
		return;
	FUZZ_CHECK(v >= b[0] && v <= b[1], "in range: %" PRIu64, (uint64_t)v);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	FUZZ_CHECK(!parse_u64(buf, b[0], b[1], &w) && w == v, "'%s' again", buf);
}

static void check_duration(const char *s)
{
	__u64 ns = 0, again = 0;
	char buf[32];

	if (parse_duration(s, 1, ~0ULL, &ns))
		return;
	fmt_duration(ns, buf, sizeof(buf));
	FUZZ_CHECK(!parse_duration(buf, 1, ~0ULL, &again) && again == ns, "'%s' is '%s' again", s,
		   buf);
}

static void check_layer(const char *s)
{
	struct xdp_rl_layer l, again;
	char buf[64], w[32];

	if (parse_layer(s, &l))
		return;
	FUZZ_CHECK(l.limit >= 1 && l.window_ns >= WINDOW_MIN_NS && l.window_ns <= WINDOW_MAX_NS,
		   "in range");
	fmt_duration(l.window_ns, w, sizeof(w));
	snprintf(buf, sizeof(buf), "%llu/%s", (unsigned long long)l.limit, w);
	FUZZ_CHECK(!parse_layer(buf, &again) && !memcmp(&l, &again, sizeof(l)), "'%s' again", buf);
}

static void check_addr(const char *s)
{
	struct ip_addr a, again;
	char buf[INET6_ADDRSTRLEN];

	if (parse_addr(s, &a))
		return;
	FUZZ_CHECK(inet_ntop(a.family, a.bytes, buf, sizeof(buf)), "printable");
	FUZZ_CHECK(!parse_addr(buf, &again) && !memcmp(&a, &again, sizeof(a)), "'%s' again", buf);
}

static void check_cidr(const char *s)
{
	struct ip_addr a, again;
	unsigned int len, len2;
	char buf[INET6_ADDRSTRLEN + 8];

	if (parse_cidr(s, &a, &len))
		return;
	FUZZ_CHECK(len <= (a.family == AF_INET ? 32U : 128U), "length %u", len);
	fmt_prefix(&a, len, buf, sizeof(buf));
	FUZZ_CHECK(!parse_cidr(buf, &again, &len2) && len2 == len && !memcmp(&a, &again, sizeof(a)),
		   "'%s' again", buf);
}

static void check_ports(const char *s)
{
	struct xdp_rl_select sel, again;
	char buf[XDP_RL_MAX_PORT_RANGES * 12 + 1];
	int i;

	memset(&sel, 0, sizeof(sel));
	memset(&again, 0, sizeof(again));
	if (parse_ports(s, &sel))
		return;
	FUZZ_CHECK(sel.nports <= XDP_RL_MAX_PORT_RANGES, "%d ranges", sel.nports);
	for (i = 0; i < sel.nports; i++)
		FUZZ_CHECK(sel.port_lo[i] >= 1 && sel.port_lo[i] <= sel.port_hi[i], "range %d", i);
	fmt_ports(&sel, buf, sizeof(buf));
	FUZZ_CHECK(!parse_ports(buf, &again) && again.nports == sel.nports &&
			   !memcmp(again.port_lo, sel.port_lo, sizeof(sel.port_lo)) &&
			   !memcmp(again.port_hi, sel.port_hi, sizeof(sel.port_hi)),
		   "'%s' again", buf);
}

static void check_word(const char *s, uint8_t pick)
{
	const struct word *w = word_tables[pick % NWORD_TABLES];
	unsigned int v, again;

	if (word_parse(w, s, &v))
		return;
	FUZZ_CHECK(!word_parse(w, word_name(w, v), &again) && again == v, "'%s' again", s);
}

static void check_lines(const char *s, size_t size)
{
	char *words[9];
	struct lines it;
	const char *why;
	int n, i;

	lines_begin(&it, s, size);
	while ((n = lines_next(&it, words, 8, &why)) != -1) {
		FUZZ_CHECK(n >= -2 && n <= 8, "%d words", n);
		for (i = 0; i < n; i++)
			FUZZ_CHECK(*words[i] && !strpbrk(words[i], " \t\r\n#"), "a word: '%s'",
				   words[i]);
		FUZZ_CHECK(n < 0 || !words[n], "the words end with NULL");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (!size)
		return 0;
	s = fuzz_string(data + 1, size - 1);
	switch (data[0] % 8) {
	case 0: check_u64(s, data[0] / 8); break;
	case 1: check_duration(s); break;
	case 2: check_addr(s); break;
	case 3: check_layer(s); break;
	case 4: check_cidr(s); break;
	case 5: check_ports(s); break;
	case 6: check_word(s, data[0] / 8); break;
	default: check_lines(s, size - 1); break;
	}
	free(s);
	return 0;
}
