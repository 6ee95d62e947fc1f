// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_rules.c - per-prefix rules in the tries (the longest prefix wins):
 * --allow, --deny, --layer per source and --shared, and a rule for a prefix
 * finer than the key.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"

/* Insert rule @r for @prefix/@len into rules4, its shared windows zeroed. */
UNIT_TEST(rules)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	static const char deny_wins[] =
		"rules: a /25 --deny inside the /24 allow wins (longest prefix)";
	static const char per_source[] =
		"rules: --layer 6/10s applies to each source in the prefix on its own";
	struct xdp_rl_live live = live_of(1, one);
	struct xdp_rl_rule allow = { .id = 0, .action = XDP_RL_RULE_ALLOW };
	struct xdp_rl_rule deny = { .id = 1, .action = XDP_RL_RULE_DENY };
	struct xdp_rl_rule own = {
		.id = 2, .action = XDP_RL_RULE_LIMIT, .nlayers = 1, .layer = { { 6, 10 * SEC_NS } }
	};
	struct xdp_rl_rule shared = { .id = 3,
				      .action = XDP_RL_RULE_LIMIT,
				      .nlayers = 1,
				      .layer = { { 4, 10 * SEC_NS } },
				      .flags = XDP_RL_RULE_F_SHARED };
	struct pkt out = build(&(struct pkt_spec){ V4, "198.18.8.1" });
	struct pkt al = build(&(struct pkt_spec){ V4, "198.18.9.1" });
	struct pkt dn = build(&(struct pkt_spec){ V4, "198.18.9.129" });
	struct pkt ow1 = build(&(struct pkt_spec){ V4, "198.18.10.1" });
	struct pkt ow2 = build(&(struct pkt_spec){ V4, "198.18.10.2" });
	struct pkt sh1 = build(&(struct pkt_spec){ V4, "198.18.11.1" });
	struct pkt sh2 = build(&(struct pkt_spec){ V4, "198.18.11.2" });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "rules: load"))
		return;
	/* /24 allow with a longer /25 deny inside it: the longest prefix wins. */
	if (rule4(&e, "198.18.9.0", 24, &allow) || rule4(&e, "198.18.9.128", 25, &deny) ||
	    rule4(&e, "198.18.10.0", 24, &own) || rule4(&e, "198.18.11.0", 24, &shared)) {
		UNIT_FAIL("rules: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.nrules4 = 0;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &al, 5), 3, "rules: with nrules4 = 0 the tries are not consulted");
	live.nrules4 = 4;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &al, 10), 10,
		  "rules: --allow passes 10 over a limit of 3, counted as allowed [passed]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_ALLOWED), 10,
		  "rules: --allow passes 10 over a limit of 3, counted as allowed [allowed]");
	ASSERT_EQ(send_n(&e, &dn, 2), 0, "%s [dropped]", deny_wins);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DENIED), 2, "%s [denied]", deny_wins);
	ASSERT_EQ(send_n(&e, &out, 5), 3, "rules: a source matching no rule keeps the global 3");
	ASSERT_EQ(send_n(&e, &ow1, 8), 6, "%s [first source]", per_source);
	ASSERT_EQ(send_n(&e, &ow2, 8), 6, "%s [second source]", per_source);
	ASSERT_EQ(send_n(&e, &sh1, 3) + send_n(&e, &sh2, 3), 4,
		  "rules: --shared 4/10s is one budget for the whole prefix");
	env_free(&e);
}

/*
 * Sources finer than the key share its windows, whatever rule each matches:
 * a packet of a source whose rule has fewer layers must leave the key's
 * other layers alone (--v4-prefix 24; a /32 rule with one layer inside).
 */
UNIT_TEST(rule_finer_than_key)
{
	static const struct xdp_rl_layer two[] = { { 100, SEC_NS }, { 5, 3600 * SEC_NS } };
	static const char desc[] = "rules finer than the key: a one-layer /32 inside keeps the "
				   "/24 key's hour layer: 5 of 10 pass in the hour, not 10";
	struct xdp_rl_rule one = {
		.id = 0, .action = XDP_RL_RULE_LIMIT, .nlayers = 1, .layer = { { 1000, SEC_NS } }
	};
	struct pkt s5 = build(&(struct pkt_spec){ V4, "198.18.20.5" });
	struct pkt s6 = build(&(struct pkt_spec){ V4, "198.18.20.6" });
	struct xdp_rl_live live = live_of(2, two);
	struct env e;
	long long count;
	int got;

	if (env_open(&e, &(struct load_opts){ .v4_prefix = 24, .layers = 2 },
		     "rules finer than the key: load"))
		return;
	rule4(&e, "198.18.20.5", 32, &one);
	live.nrules4 = 1;
	env_live(&e, &live);
	got = send_n(&e, &s6, 5);
	send_n(&e, &s5, 1);
	e.skel->bss->fake_now_ns += 2 * SEC_NS;
	got += send_n(&e, &s6, 5);
	count = count4_layer(&e, "198.18.20.0", 1);
	ASSERT_EQ(got, 5, "%s (count %lld) [passed]", desc, count);
	ASSERT_EQ(count, 10, "%s (count %lld) [hour layer count]", desc, count);
	env_free(&e);
}
