// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_verdicts.c - parsing and verdicts: a table of frames (IPv4, IPv6,
 * 802.1Q, QinQ, ARP, every malformed shape), each with the verdict it must
 * get and the one counter it must move.
 */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>

#include "harness.h"

enum mangle {
	M_NONE,
	M_IHL4,
	M_IHL_PAST_END,
	M_TOTLEN_SHORT,
	M_V4_SHORT,
	M_V4_VERSION,
	M_V6_SHORT,
	M_VLAN_TRUNC,
	M_ARP,
	M_THREE_TAGS,
};

struct vcase {
	const char *desc;
	struct pkt_spec spec;
	enum mangle mangle;
	int verdict;
	int stat; /* the counter that must go up by one */
};

/* Break an IPv4 header at offset 14 of a plain Ethernet frame (copied out: it is not aligned). */
static void mangle_ip(struct pkt *p, enum mangle m)
{
	struct iphdr ip;

	memcpy(&ip, p->b + ETH_HLEN, sizeof(ip));
	switch (m) {
	case M_IHL4: ip.ihl = 4; break;
	case M_IHL_PAST_END:
		ip.ihl = 15; /* 60 bytes, the frame has 28 after Ethernet */
		break;
	case M_TOTLEN_SHORT: ip.tot_len = htons(12); break;
	case M_V4_VERSION: ip.version = 6; break;
	default: return;
	}
	memcpy(p->b + ETH_HLEN, &ip, sizeof(ip));
}

static void mangle(struct pkt *p, enum mangle m)
{
	switch (m) {
	case M_NONE: break;
	case M_IHL4:
	case M_IHL_PAST_END:
	case M_TOTLEN_SHORT:
	case M_V4_VERSION: mangle_ip(p, m); break;
	case M_V4_SHORT: p->len = ETH_HLEN + 12; break;
	case M_V6_SHORT: p->len = ETH_HLEN + 30; break;
	case M_VLAN_TRUNC:
		p->len = ETH_HLEN + 2; /* the tag's TCI only */
		break;
	case M_ARP: put16(p->b + 12, ETH_P_ARP); break;
	case M_THREE_TAGS:
		/* Two tags, and a third TPID where the payload type should be. */
		put16(p->b + 12 + 8, ETH_P_8021Q);
		break;
	}
}

UNIT_TEST(verdicts)
{
	static const struct vcase cases[] = {
		{ "IPv4 UDP", { V4, "198.18.1.1" }, M_NONE, XDP_PASS, XDP_RL_STAT_PASSED },
		{ "IPv6 UDP", { V6, "2001:2::1" }, M_NONE, XDP_PASS, XDP_RL_STAT_PASSED },
		{ "802.1Q IPv4", { V4, "198.18.1.2", 1 }, M_NONE, XDP_PASS, XDP_RL_STAT_PASSED },
		{ "QinQ (802.1ad + 802.1Q) IPv4",
		  { V4, "198.18.1.3", 2 },
		  M_NONE,
		  XDP_PASS,
		  XDP_RL_STAT_PASSED },
		{ "QinQ IPv6", { V6, "2001:2::3", 2 }, M_NONE, XDP_PASS, XDP_RL_STAT_PASSED },
		{ "ARP is not IP", { V4, "198.18.1.4" }, M_ARP, XDP_PASS, XDP_RL_STAT_NOT_IP },
		{ "three VLAN tags: beyond the parser, unclassified (malformed, fail closed)",
		  { V4, "198.18.1.5", 2 },
		  M_THREE_TAGS,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		/* A frame shorter than Ethernet never reaches XDP (test_run refuses it too). */
		{ "truncated VLAN tag",
		  { V4, "198.18.1.7", 1 },
		  M_VLAN_TRUNC,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		{ "IPv4 ihl < 5", { V4, "198.18.1.8" }, M_IHL4, XDP_DROP, XDP_RL_STAT_MALFORMED },
		{ "IPv4 header longer than the frame",
		  { V4, "198.18.1.9" },
		  M_IHL_PAST_END,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		{ "IPv4 total length shorter than the header",
		  { V4, "198.18.1.10" },
		  M_TOTLEN_SHORT,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		{ "IPv4 truncated before 20 bytes",
		  { V4, "198.18.1.11" },
		  M_V4_SHORT,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		{ "IPv4 EtherType with version 6",
		  { V4, "198.18.1.12" },
		  M_V4_VERSION,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
		{ "IPv6 truncated before 40 bytes",
		  { V6, "2001:2::4" },
		  M_V6_SHORT,
		  XDP_DROP,
		  XDP_RL_STAT_MALFORMED },
	};
	struct xdp_rl_stats before, after;
	struct env e;
	char desc[160];
	size_t i;
	int v, j, others;

	if (env_open(&e, &(struct load_opts){ 0 }, "verdict: load"))
		return;
	env_set(&e, 100, 10 * SEC_NS, 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct vcase *c = &cases[i];
		struct pkt p = build(&c->spec);

		mangle(&p, c->mangle);
		stats(&e, &before);
		v = run(&e, &p, 1);
		stats(&e, &after);
		/* Exactly one of the verdict counters moved, and it is ours. */
		for (others = 0, j = XDP_RL_STAT_PASSED; j <= XDP_RL_STAT_MALFORMED; j++)
			others += j != c->stat && after.c[j] != before.c[j];
		snprintf(desc, sizeof(desc), "verdict: %s -> %s (got %s), %s counted", c->desc,
			 verdict(c->verdict), verdict(v),
			 c->stat == XDP_RL_STAT_PASSED ? "passed" :
			 c->stat == XDP_RL_STAT_NOT_IP ? "not_ip" :
							 "malformed");
		ASSERT_EQ(v, c->verdict, "%s [verdict]", desc);
		ASSERT_EQ(after.c[c->stat] - before.c[c->stat], 1, "%s [counted once]", desc);
		ASSERT_EQ(others, 0, "%s [no other verdict counter moved]", desc);
	}
	env_free(&e);
}

/* Dry run: a malformed frame is counted but not dropped. */
UNIT_TEST(verdict_dry_run)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.1.13" });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "verdict: load"))
		return;
	env_set(&e, 100, 10 * SEC_NS, XDP_RL_F_DRY_RUN);
	mangle(&p, M_IHL4);
	stats(&e, &before);
	ASSERT_EQ(run(&e, &p, 1), XDP_PASS,
		  "verdict: dry run passes a malformed frame and counts it [passes]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_MALFORMED), 1,
		  "verdict: dry run passes a malformed frame and counts it [counted malformed]");
	env_free(&e);
}
