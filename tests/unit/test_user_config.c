// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_config.c - the config file (user/config.h): parsed, printed and
 * parsed again, and refused with a reason. No root, no kernel; built into
 * build/test_user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "config.h"
#include "options.h"
#include "unit.h"

#define SEC_NS 1000000000ULL

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
			 "ban 90s\n"
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
			 "rule 198.18.0.0/24 --allow\n"
			 "rule 198.18.2.0/24 --layer 1/1s --layer 2/1m --layer 3/1h --ban 1d "
			 "--proto tcp --dport 80 --syn",
			 "x.conf", &c, why, sizeof(why)),
		  0, "config_parse: every setting, comments, blank lines, CRLF, tabs");
	ASSERT_STREQ(why, "", "config_parse: ... and nothing to say");
	ASSERT_STREQ(c.ifname, "eth0", "config_parse: the interface line names it");
	ASSERT_EQ(c.s.live.nlayers, 2, "config_parse: two layer lines are two layers");
	ASSERT_EQ(c.s.live.layer[1].limit, 3000, "config_parse: the second layer's limit");
	ASSERT_EQ(c.s.live.layer[1].window_ns, 60 * SEC_NS, "config_parse: its window");
	ASSERT_EQ(c.s.live.flags & (XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN),
		  XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN, "config_parse: aligned and dry-run");
	ASSERT_EQ(c.s.live.ban_ns, 90 * SEC_NS, "config_parse: ban");
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
	ASSERT_EQ(c.s.nrules, 4, "config_parse: four rules");
	ASSERT_EQ(c.s.rules[0].rule.action, XDP_RL_RULE_ALLOW,
		  "config_parse: the rules sorted, IPv4 by address first");
	ASSERT_EQ(c.s.rules[0].line, 23, "config_parse: ... each with its line");
	ASSERT_EQ(c.s.rules[2].rule.ban_ns, 86400 * SEC_NS,
		  "config_parse: a rule's ban, on a line of 17 words");
	ASSERT_EQ(c.s.rules[3].rule.action, XDP_RL_RULE_DENY, "config_parse: IPv6 last");
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
	ASSERT_EQ(config("enforce\nno-syn\nnew-sources off\nproto any\ndport any\nban off\n",
			 "a.conf", &c, why, sizeof(why)),
		  0, "config_parse: set's words for the defaults, explicit");
	ASSERT_EQ(xdp_rl_select_all(&c.s.live.select), 1, "config_parse: ... select every packet");
	ASSERT_EQ(c.s.live.ban_ns, 0, "config_parse: ... and ban no source");
	config_free(&c);
	ASSERT_EQ(config("ban 0\n", "a.conf", &c, why, sizeof(why)), 0,
		  "config_parse: ban 0 is ban off");
	ASSERT_EQ(c.s.live.ban_ns, 0, "config_parse: ... no ban");
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
		   "--layer 4/366d --ban 366d --proto tcp --dport 1-65535 --syn\n"
		   "rule 0.0.0.0/0 --deny --proto icmp\nrule ::/0 --allow --proto icmpv6\n"
		   "ban 1500ms\n",
		   "config_print: every setting and kind of rule");
	round_trip("ban 2h\nrule 198.18.0.0/24 --layer 5/1s --ban 30s\n",
		   "config_print: a ban, and a rule's");

	ASSERT_EQ(config("interface lo\nlimit 5\nwindow 60s\n", "a.conf", &c, why, sizeof(why)), 0,
		  "config_print: a limit of 5 per 60s");
	t = config_text(&c, &len);
	ASSERT_STRSTR(t,
		      "\nlimit 5\nwindow 1m\nper-key\nenforce\nban off\nnew-sources off\n"
		      "proto any\ndport any\nno-syn\nlink-local per-address\n",
		      "config_print: every setting explicit, durations at their shortest");
	free(t);
	config_free(&c);

	ASSERT_EQ(config("interface lo\nban 3600s\nrule 198.18.0.0/24 --layer 5/1s --ban 90s\n",
			 "a.conf", &c, why, sizeof(why)),
		  0, "config_print: a ban of 3600s, a rule's of 90s");
	t = config_text(&c, &len);
	ASSERT_STRSTR(t, "\nenforce\nban 1h\nnew-sources off\n",
		      "config_print: the ban after enforce, at its shortest");
	ASSERT_STRSTR(t, "\nrule 198.18.0.0/24 --layer 5/1s --ban 90s\n",
		      "config_print: the rule's ban, as rule add takes it");
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
		{ "ban\n", "e.conf:1: 'ban' takes a value: ban DUR" },
		{ "ban 1\n", "e.conf:1: invalid ban '1': needs a unit" },
		{ "ban 367d\n", "e.conf:1: invalid ban '367d': out of range 1ms..366d (or 'off')" },
		{ "ban never\n", "e.conf:1: invalid ban 'never': not a number (or 'off')" },
		{ "ban 1m\nban off\n", "e.conf:2: a second 'ban' (line 1 has one)" },
		{ "rule 198.18.0.0/24 --layer 1/1s --shared --ban 1m\n",
		  "e.conf:1: rule: a --shared budget is not banned" },
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

/* ---- rates (--rate N/DUR --burst B) in a config file ------------------------- */

/* Rates: parsed, with a burst of N by default; printed; refused with a reason and a line. */
UNIT_TEST(config_rate)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "rate 100/1s\nlimit 5\n",
		  "e.conf:2: give either rate or limit/window, not both" },
		{ "layer 5/1s\n\nrate 100/1s\n", "e.conf:3: give either rate or layer, not both" },
		{ "burst 5\n", "e.conf:1: burst goes with rate N/DUR" },
		{ "rate 100/1s\naligned\n", "e.conf:2: a rate has no windows to align" },
		{ "aligned\nrule 198.18.0.0/24 --rate 1/1s\n",
		  "e.conf:2: a rule limits by a rate, which has no windows to align" },
		{ "rate 1/1h\n",
		  "e.conf:1: cannot keep rate: 1/1h is slower than the slowest rate" },
		{ "rate 100/1s\nburst 100000000\n", "e.conf:2: cannot keep rate: a burst of" },
		{ "rate 100/1s\nburst 0\n", "e.conf:2: invalid burst '0'" },
		{ "rate 100\n", "e.conf:1: invalid rate '100': needs the form N/DUR" },
		{ "bytes\nrate 1000/1s\nburst 59\n",
		  "e.conf:3: a burst of 59 bytes can never pass a frame" },
		{ "rate 1/1s\nrate 2/1s\n", "e.conf:2: a second 'rate' (line 1 has one)" },
		{ "rule 198.18.0.0/24 --rate 1/1s --layer 1/1s\n",
		  "e.conf:1: rule: give either --rate or --layer, not both" },
	};
	const struct xdp_rl_layer *l;
	struct config c;
	char why[512], *t;
	size_t i, len;

	ASSERT_EQ(config("rate 100/1s\n", "a.conf", &c, why, sizeof(why)), 0, "config_rate: %s",
		  why);
	l = &c.s.live.layer[0];
	ASSERT_EQ(c.s.live.nlayers, 1, "config_rate: one layer");
	ASSERT_TRUE(xdp_rl_is_rate(l), "config_rate: ... a rate");
	ASSERT_EQ(l->limit, 100, "config_rate: ... of 100");
	ASSERT_EQ(l->window_ns, SEC_NS, "config_rate: ... per 1s");
	ASSERT_EQ(l->burst, 100, "config_rate: ... its burst N, not given");
	ASSERT_EQ(l->tau_ns, SEC_NS, "config_rate: ... which takes 1s to earn back");
	ASSERT_EQ(xdp_rl_rate_cost(l->per_fp, 1), 10000000, "config_rate: a unit is 10 ms");
	t = config_text(&c, &len);
	if (ASSERT_TRUE(t != NULL, "config_rate: printed")) {
		ASSERT_STRSTR(t, "\nrate 100/1s\nburst 100\n", "config_rate: ... its two lines");
		ASSERT_TRUE(!strstr(t, "\nlimit ") && !strstr(t, "\nwindow "),
			    "config_rate: ... without a window's lines: %s", t);
	}
	free(t);
	config_free(&c);

	round_trip("rate 6000/1m\nburst 250\nrule 198.18.0.0/24 --rate 10/1s --burst 5 --shared\n"
		   "rule 198.18.1.0/24 --rate 3/1s --ban 1m\n",
		   "config_rate: a rate, and rules'");
	round_trip("bytes\nrate 125000/1s\nburst 3000\n", "config_rate: bytes");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(config(bad[i].text, "e.conf", &c, why, sizeof(why)), -1,
			  "config_rate refuses: %s", bad[i].why);
		ASSERT_STRSTR(why, bad[i].why, "config_rate: ... saying so");
		config_free(&c);
	}
}

/* config_diff_settings' lines, appended to @ctx (1024 bytes), a line each. */
static void diff_line(const char *what, void *ctx)
{
	size_t off = strlen(ctx);

	snprintf((char *)ctx + off, 1024 - off, "%s\n", what);
}

/* config_diff_settings: a change of a rate is the lines that changed; windows <-> rate, as one. */
UNIT_TEST(config_rate_diff)
{
	struct config a, b;
	char why[512], out[1024] = "";
	int n;

	ASSERT_EQ(config("rate 100/1s\nburst 200\n", "a.conf", &a, why, sizeof(why)), 0,
		  "config_rate_diff: %s", why);
	ASSERT_EQ(config("rate 100/1s\nburst 300\n", "b.conf", &b, why, sizeof(why)), 0,
		  "config_rate_diff: %s", why);
	n = config_diff_settings(&a, &b, diff_line, out);
	ASSERT_EQ(n, 1, "config_rate_diff: a new burst is one change: %s", out);
	ASSERT_STREQ(out, "burst 300 (was burst 200)\n", "config_rate_diff: ... said so");
	config_free(&b);
	out[0] = '\0';
	ASSERT_EQ(config("limit 5\nwindow 1m\n", "b.conf", &b, why, sizeof(why)), 0,
		  "config_rate_diff: %s", why);
	n = config_diff_settings(&a, &b, diff_line, out);
	ASSERT_EQ(n, 1, "config_rate_diff: a rate to a window is one change: %s", out);
	ASSERT_STREQ(out, "limit 5, window 1m (was rate 100/1s, burst 200)\n",
		     "config_rate_diff: ... of the limits as a whole");
	config_free(&a);
	config_free(&b);
}
