// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rules with selectors nested in one another (user/rules.c's
 * rules_too_nested): a packet that a rule's selector misses is judged by
 * the next shorter rule, and the datapath walks at most XDP_RL_SELECT_NEST
 * rules with selectors in a row, so a rules file, a config file and
 * `rule add` refuse a deeper chain, naming it.
 */
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "unit.h"

static int parse(const char *text, char *why, size_t len)
{
	struct rule_spec *v = NULL;
	size_t n = 0;
	int r = rules_parse_text(text, strlen(text), "t.rules", &v, &n, why, len);

	free(v);
	return r;
}

UNIT_TEST(rules_nesting)
{
	char why[512];

	ASSERT_EQ(parse("198.18.0.0/16 --allow --syn\n"
			"198.18.7.0/24 --allow --proto udp\n"
			"198.18.7.7/32 --deny --dport 22\n",
			why, sizeof(why)),
		  0, "nesting: three rules with selectors in a row are taken");
	ASSERT_EQ(parse("198.18.0.0/16 --allow --syn\n"
			"198.18.7.0/24 --allow --proto udp\n"
			"198.18.7.4/30 --layer 5/1s --proto tcp\n"
			"198.18.7.7/32 --deny --dport 22\n",
			why, sizeof(why)),
		  -1, "nesting: a fourth is refused");
	ASSERT_STRSTR(why,
		      "t.rules:4: 4 rules with selectors nest in one another, none without a "
		      "selector between (198.18.0.0/16, 198.18.7.0/24, 198.18.7.4/30, "
		      "198.18.7.7/32)",
		      "nesting: the message names the line and the chain");
	ASSERT_EQ(parse("198.18.0.0/16 --allow --syn\n"
			"198.18.7.0/24 --deny\n"
			"198.18.7.4/30 --layer 5/1s --proto tcp\n"
			"198.18.7.6/31 --allow --proto udp\n"
			"198.18.7.7/32 --deny --dport 22\n",
			why, sizeof(why)),
		  0, "nesting: a rule without a selector between breaks the chain");
	ASSERT_EQ(parse("198.18.0.0/24 --allow --syn\n198.18.1.0/24 --allow --syn\n"
			"198.18.2.0/24 --allow --syn\n198.18.3.0/24 --allow --syn\n"
			"2001:2::/48 --allow --syn\n",
			why, sizeof(why)),
		  0, "nesting: side by side is no nesting");
	ASSERT_EQ(parse("2001:2::/32 --allow --syn\n2001:2::/48 --allow --syn\n"
			"2001:2::/64 --allow --syn\n2001:2::1/128 --allow --syn\n",
			why, sizeof(why)),
		  -1, "nesting: IPv6 too");
}
