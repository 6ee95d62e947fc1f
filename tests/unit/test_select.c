// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_select.c - which packets a limit applies to (--proto, --dport,
 * --syn, and rules' selectors), and link-local sources (--link-local).
 * Packets no limit selects pass untouched, counted as unselected.
 */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>

#include "harness.h"

#define SYN 0x02
#define ACK 0x10

/* One limit of 1 in an hour selecting @sel: the global limit. */
static void env_select(struct env *e, const struct xdp_rl_select *sel, __u32 link_local)
{
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT };

	live.layer[0].limit = 1;
	live.layer[0].window_ns = 3600 * SEC_NS;
	live.select = *sel;
	live.link_local = link_local;
	env_live(e, &live);
}

#define UNJUDGED 2

struct scase {
	const char *desc;
	struct pkt_spec spec;
	/* 1: limited (the second packet is dropped); 0: passed untouched; UNJUDGED: both dropped */
	int selected;
};

static void run_cases(struct env *e, const char *what, const struct scase *c, size_t n)
{
	struct xdp_rl_stats before;
	size_t i;
	int first, second;

	for (i = 0; i < n; i++) {
		struct pkt p = build(&c[i].spec);

		stats(e, &before);
		first = run(e, &p, 1);
		second = run(e, &p, 1);
		if (c[i].selected == UNJUDGED) {
			ASSERT_EQ(first, XDP_DROP, "%s: %s: dropped, no limit known to be its",
				  what, c[i].desc);
			ASSERT_EQ(second, XDP_DROP, "%s: %s: the second too", what, c[i].desc);
			ASSERT_EQ(stat_delta(e, &before, XDP_RL_STAT_MALFORMED), 2,
				  "%s: %s: counted as malformed", what, c[i].desc);
			ASSERT_EQ(stat_delta(e, &before, XDP_RL_STAT_NEW_WINDOWS), 0,
				  "%s: %s: no window charged", what, c[i].desc);
			continue;
		}
		ASSERT_EQ(first, XDP_PASS, "%s: %s: the first packet passes", what, c[i].desc);
		ASSERT_EQ(second, c[i].selected ? XDP_DROP : XDP_PASS, "%s: %s: the second is %s",
			  what, c[i].desc,
			  c[i].selected ? "dropped (limit 1)" : "passed untouched");
		ASSERT_EQ(stat_delta(e, &before, XDP_RL_STAT_UNSELECTED), c[i].selected ? 0 : 2,
			  "%s: %s: counted as unselected", what, c[i].desc);
		ASSERT_EQ(stat_delta(e, &before, XDP_RL_STAT_PASSED), c[i].selected ? 1 : 0,
			  "%s: %s: counted as passed by the limit", what, c[i].desc);
	}
}

UNIT_TEST(select_ports)
{
	/* --proto tcp --dport 80,443,8000-8100 */
	struct xdp_rl_select sel = {
		.proto = IPPROTO_TCP, .nports = 2, .port_lo = { 80, 8000 }, .port_hi = { 80, 8100 }
	};
	static const struct scase cases[] = {
		{ "TCP to 80",
		  { V4, "198.18.30.1", .proto = IPPROTO_TCP, .dport = 80, .tcp_flags = ACK },
		  1 },
		{ "TCP to 8050 (in a range)",
		  { V4, "198.18.30.2", .proto = IPPROTO_TCP, .dport = 8050 },
		  1 },
		{ "TCP to 8100 (a range's end)",
		  { V4, "198.18.30.3", .proto = IPPROTO_TCP, .dport = 8100 },
		  1 },
		{ "TCP to 8101", { V4, "198.18.30.4", .proto = IPPROTO_TCP, .dport = 8101 }, 0 },
		{ "TCP to 22", { V4, "198.18.30.5", .proto = IPPROTO_TCP, .dport = 22 }, 0 },
		{ "UDP to 80", { V4, "198.18.30.6", .proto = IPPROTO_UDP, .dport = 80 }, 0 },
		{ "ICMP", { V4, "198.18.30.7", .proto = IPPROTO_ICMP }, 0 },
		{ "a later TCP fragment (no ports: selected, fail closed)",
		  { V4, "198.18.30.8", .proto = IPPROTO_TCP, .later_fragment = 1 },
		  1 },
		{ "a later UDP fragment",
		  { V4, "198.18.30.9", .proto = IPPROTO_UDP, .later_fragment = 1 },
		  0 },
		{ "IPv6 TCP to 80", { V6, "2001:2:0:30::1", .proto = IPPROTO_TCP, .dport = 80 }, 1 },
		{ "IPv6 TCP to 80 past two extension headers",
		  { V6, "2001:2:0:31::1", .proto = IPPROTO_TCP, .dport = 80, .ext = 2 },
		  1 },
		{ "IPv6 TCP to 22 past an extension header",
		  { V6, "2001:2:0:32::1", .proto = IPPROTO_TCP, .dport = 22, .ext = 1 },
		  0 },
		{ "IPv6 later TCP fragment",
		  { V6, "2001:2:0:33::1", .proto = IPPROTO_TCP, .later_fragment = 1 },
		  1 },
		{ "IPv6 TCP to 22 past 8 extension headers (the walk's end)",
		  { V6, "2001:2:0:38::1", .proto = IPPROTO_TCP, .dport = 22, .ext = 8 },
		  0 },
		{ "IPv6 TCP to 22 past 9 extension headers (transport not found: fail closed)",
		  { V6, "2001:2:0:39::1", .proto = IPPROTO_TCP, .dport = 22, .ext = 9 },
		  UNJUDGED },
		{ "a first TCP fragment to 22 with 8 bytes of header (ports read)",
		  { V4, "198.18.30.10", .proto = IPPROTO_TCP, .dport = 22, .first_cut = 1 },
		  0 },
		{ "a first TCP fragment to 80 with 8 bytes of header",
		  { V4, "198.18.30.11", .proto = IPPROTO_TCP, .dport = 80, .first_cut = 1 },
		  1 },
	};
	struct env e;

	sel.nports = 2;
	sel.port_lo[1] = 8000;
	sel.port_hi[1] = 8100;
	if (env_open(&e, &(struct load_opts){ 0 }, "select ports: load"))
		return;
	env_select(&e, &sel, XDP_RL_LL_ADDRESS);
	run_cases(&e, "select --proto tcp --dport 80,8000-8100", cases,
		  sizeof(cases) / sizeof(cases[0]));
	env_free(&e);
}

UNIT_TEST(select_syn)
{
	struct xdp_rl_select sel = { .syn = 1 };
	static const struct scase cases[] = {
		{ "a SYN",
		  { V4, "198.18.31.1", .proto = IPPROTO_TCP, .dport = 443, .tcp_flags = SYN },
		  1 },
		{ "a SYN+ACK (a reply to the server's own connection)",
		  { V4, "198.18.31.2", .proto = IPPROTO_TCP, .dport = 443, .tcp_flags = SYN | ACK },
		  0 },
		{ "an ACK",
		  { V4, "198.18.31.3", .proto = IPPROTO_TCP, .dport = 443, .tcp_flags = ACK },
		  0 },
		{ "UDP", { V4, "198.18.31.4", .proto = IPPROTO_UDP, .dport = 443 }, 0 },
		{ "a later TCP fragment (its flags unread: selected, fail closed)",
		  { V4, "198.18.31.5", .proto = IPPROTO_TCP, .later_fragment = 1 },
		  1 },
		{ "a first TCP fragment cut before the flags (selected, fail closed)",
		  { V4, "198.18.31.6", .proto = IPPROTO_TCP, .dport = 443, .first_cut = 1 },
		  1 },
		{ "a later UDP fragment (not TCP)",
		  { V4, "198.18.31.7", .proto = IPPROTO_UDP, .later_fragment = 1 },
		  0 },
		{ "an IPv6 SYN",
		  { V6, "2001:2:0:34::1", .proto = IPPROTO_TCP, .dport = 22, .tcp_flags = SYN },
		  1 },
		{ "an IPv6 first TCP fragment cut before the flags",
		  { V6, "2001:2:0:3a::2", .proto = IPPROTO_TCP, .dport = 22, .first_cut = 1 },
		  1 },
		{ "an IPv6 ACK past 9 extension headers (transport not found)",
		  { V6, "2001:2:0:3b::3", .proto = IPPROTO_TCP, .tcp_flags = ACK, .ext = 9 },
		  UNJUDGED },
	};
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "select syn: load"))
		return;
	env_select(&e, &sel, XDP_RL_LL_ADDRESS);
	run_cases(&e, "select --syn", cases, sizeof(cases) / sizeof(cases[0]));
	env_free(&e);
}

UNIT_TEST(select_proto)
{
	struct xdp_rl_select sel = { .proto = IPPROTO_ICMPV6 };
	static const struct scase cases[] = {
		{ "ICMPv6", { V6, "2001:2:0:35::1", .proto = IPPROTO_ICMPV6 }, 1 },
		{ "UDP over IPv6", { V6, "2001:2:0:36::1", .proto = IPPROTO_UDP, .dport = 53 }, 0 },
		{ "ICMP over IPv4", { V4, "198.18.32.1", .proto = IPPROTO_ICMP }, 0 },
		{ "UDP past 9 extension headers (transport not found: fail closed)",
		  { V6, "2001:2:0:36::2", .proto = IPPROTO_UDP, .dport = 53, .ext = 9 },
		  UNJUDGED },
	};
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "select proto: load"))
		return;
	env_select(&e, &sel, XDP_RL_LL_ADDRESS);
	run_cases(&e, "select --proto icmpv6", cases, sizeof(cases) / sizeof(cases[0]));
	env_free(&e);
}

/*
 * A rule with a selector applies to the packets it selects; the prefix's
 * other packets are judged by the global limit: 20 SYN/1s and 2 000
 * packets/1s to port 443 for the same source, here 1 and 2 per hour.
 */
UNIT_TEST(select_rule)
{
	struct xdp_rl_rule syn = { .id = 0,
				   .action = XDP_RL_RULE_LIMIT,
				   .nlayers = 1,
				   .lsid = 7,
				   .layer = { { 1, 3600 * SEC_NS } },
				   .prefixlen = 16,
				   .select = { .syn = 1 } };
	struct xdp_rl_rule_key4 k = { .prefixlen = 16 };
	struct xdp_rl_layers zero = {};
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT, .nrules4 = 1 };
	struct pkt s = build(&(struct pkt_spec){ V4, "198.18.33.1", .proto = IPPROTO_TCP,
						 .dport = 443, .tcp_flags = SYN });
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.33.1", .proto = IPPROTO_TCP,
						 .dport = 443, .tcp_flags = ACK });
	struct pkt d = build(&(struct pkt_spec){ V4, "198.18.33.1", .proto = IPPROTO_TCP,
						 .dport = 22, .tcp_flags = ACK });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "select rule: load"))
		return;
	inet_pton(AF_INET, "198.18.0.0", &k.addr);
	bpf_map_update_elem(bpf_map__fd(e.skel->maps.shared), &syn.id, &zero, 0);
	bpf_map_update_elem(bpf_map__fd(e.skel->maps.rules4), &k, &syn, 0);
	live.layer[0].limit = 2;
	live.layer[0].window_ns = 3600 * SEC_NS;
	live.select = (struct xdp_rl_select){
		.proto = IPPROTO_TCP, .nports = 1, .port_lo = { 443 }, .port_hi = { 443 }
	};
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &s, 3), 1, "select rule: SYNs: 1 of 3 pass (the rule's 1/h)");
	ASSERT_EQ(send_n(&e, &a, 3), 2, "select rule: ACKs to 443: 2 of 3 (the global 2/h)");
	ASSERT_EQ(send_n(&e, &d, 3), 3, "select rule: ACKs to 22: selected by neither, all pass");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED), 3, "select rule: 3 unselected");
	env_free(&e);
}

/*
 * Link-local sources: each keyed by its own address by default, so one
 * neighbour's flood does not take its neighbours' budget (with the default
 * /64 every fe80:: address would share one window); or keyed by the prefix
 * as before; or exempt.
 */
UNIT_TEST(link_local)
{
	struct pkt n1 = build(&(struct pkt_spec){ V6, "fe80::1", .proto = IPPROTO_ICMPV6 });
	struct pkt n2 = build(&(struct pkt_spec){ V6, "fe80::2", .proto = IPPROTO_ICMPV6 });
	struct pkt v1 = build(&(struct pkt_spec){ V4, "169.254.7.1" });
	struct pkt v2 = build(&(struct pkt_spec){ V4, "169.254.7.2" });
	struct pkt g1 = build(&(struct pkt_spec){ V6, "2001:2:0:37::1" });
	struct pkt g2 = build(&(struct pkt_spec){ V6, "2001:2:0:37::2" });
	struct xdp_rl_live live = { .nlayers = 1 };
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .v4_prefix = 16 }, "link-local: load"))
		return;
	live.layer[0].limit = 2;
	live.layer[0].window_ns = 3600 * SEC_NS;
	live.link_local = XDP_RL_LL_ADDRESS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &n1, 5), 2, "link-local per address: fe80::1 floods, 2 of 5");
	ASSERT_EQ(send_n(&e, &n2, 2), 2, "link-local per address: fe80::2 keeps its own 2");
	ASSERT_EQ(send_n(&e, &v1, 5), 2, "link-local per address: 169.254.7.1 floods, 2 of 5");
	ASSERT_EQ(send_n(&e, &v2, 2), 2, "link-local per address: 169.254.7.2 keeps its own 2");
	ASSERT_EQ(send_n(&e, &g1, 2) + send_n(&e, &g2, 2), 2,
		  "link-local per address: global sources still share their /64");

	live.link_local = XDP_RL_LL_EXEMPT;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &n1, 5), 5, "link-local exempt: passed untouched");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED), 5,
		  "link-local exempt: unselected");

	live.link_local = XDP_RL_LL_PREFIX;
	live.lsid = 9; /* fresh windows */
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &n1, 2) + send_n(&e, &n2, 2), 2,
		  "link-local prefix: fe80::1 and fe80::2 share fe80::/64, as any source");
	env_free(&e);
}

/* Put rule @r on 198.18.0.0/@len's prefix @addr (an IPv4 rule; its prefixlen set as rules.c sets it). */
static void put_rule4(struct env *e, const char *addr, __u32 len, struct xdp_rl_rule r)
{
	struct xdp_rl_rule_key4 k = { .prefixlen = len };
	struct xdp_rl_layers zero = {};

	r.prefixlen = len;
	inet_pton(AF_INET, addr, &k.addr);
	bpf_map_update_elem(bpf_map__fd(e->skel->maps.shared), &r.id, &zero, 0);
	bpf_map_update_elem(bpf_map__fd(e->skel->maps.rules4), &k, &r, 0);
}

/*
 * A rule whose selector misses is as if it did not exist: the next shorter
 * rule that matches judges the packet, not the global limits. The case
 * issue 21 found: 198.18.0.0/16 --deny under 198.18.7.7/32 --allow --proto
 * icmp let UDP from 198.18.7.7 through. And a chain of rules with
 * selectors, each missed, down to a rule without one.
 */
UNIT_TEST(select_rule_nested)
{
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT, .nrules4 = 5 };
	struct pkt udp =
		build(&(struct pkt_spec){ V4, "198.18.7.7", .proto = IPPROTO_UDP, .dport = 53 });
	struct pkt icmp = build(&(struct pkt_spec){ V4, "198.18.7.7", .proto = IPPROTO_ICMP });
	struct pkt other = build(&(struct pkt_spec){ V4, "198.18.9.9", .proto = IPPROTO_ICMP });
	struct pkt syn22 = build(&(struct pkt_spec){ V4, "198.19.1.1", .proto = IPPROTO_TCP,
						     .dport = 22, .tcp_flags = SYN });
	struct pkt udp22 =
		build(&(struct pkt_spec){ V4, "198.19.1.1", .proto = IPPROTO_UDP, .dport = 22 });
	struct pkt ack80 = build(&(struct pkt_spec){ V4, "198.19.1.1", .proto = IPPROTO_TCP,
						     .dport = 80, .tcp_flags = ACK });
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "select rule nested: load"))
		return;
	put_rule4(&e, "198.18.0.0", 16,
		  (struct xdp_rl_rule){ .id = 0, .action = XDP_RL_RULE_DENY });
	put_rule4(&e, "198.18.7.7", 32,
		  (struct xdp_rl_rule){ .id = 1,
					.action = XDP_RL_RULE_ALLOW,
					.select = { .proto = IPPROTO_ICMP } });
	/* 198.19.0.0/16 1/h; inside it /24 --syn 2/h, /32 --dport 22 --proto udp allow. */
	put_rule4(&e, "198.19.0.0", 16,
		  (struct xdp_rl_rule){ .id = 2,
					.action = XDP_RL_RULE_LIMIT,
					.nlayers = 1,
					.lsid = 12,
					.layer = { { 1, 3600 * SEC_NS } } });
	put_rule4(&e, "198.19.1.0", 24,
		  (struct xdp_rl_rule){ .id = 3,
					.action = XDP_RL_RULE_LIMIT,
					.nlayers = 1,
					.lsid = 13,
					.layer = { { 2, 3600 * SEC_NS } },
					.select = { .syn = 1 } });
	put_rule4(&e, "198.19.1.1", 32,
		  (struct xdp_rl_rule){ .id = 4,
					.action = XDP_RL_RULE_ALLOW,
					.select = { .proto = IPPROTO_UDP,
						    .nports = 1,
						    .port_lo = { 22 },
						    .port_hi = { 22 } } });
	live.layer[0].limit = 100;
	live.layer[0].window_ns = 3600 * SEC_NS;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &icmp, 3), 3, "nested: ICMP from 198.18.7.7 is allowed by its /32");
	ASSERT_EQ(send_n(&e, &udp, 3), 0,
		  "nested: its UDP falls to the /16's deny, not the global");
	ASSERT_EQ(send_n(&e, &other, 2), 0, "nested: the rest of the /16 is denied");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_DENIED), 5, "nested: 5 denied");
	ASSERT_EQ(send_n(&e, &udp22, 3), 3, "nested: UDP to 22 from 198.19.1.1: its /32 allows");
	ASSERT_EQ(send_n(&e, &syn22, 4), 2, "nested: its SYNs: the /24's --syn 2/h");
	ASSERT_EQ(send_n(&e, &ack80, 3), 1, "nested: its ACKs miss both selectors: the /16's 1/h");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED), 0,
		  "nested: nothing passed as unselected");
	env_free(&e);
}

/*
 * Past the walk's bound (user space refuses such rule sets: rules.c), a
 * packet is counted by the global limits whatever their selector, never
 * passed as unselected: five nested rules with selectors that miss.
 */
UNIT_TEST(select_rule_too_nested)
{
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_SELECT, .nrules4 = 5 };
	struct pkt ack = build(&(struct pkt_spec){ V4, "198.18.44.1", .proto = IPPROTO_TCP,
						   .dport = 80, .tcp_flags = ACK });
	static const char *const pfx[] = { "198.18.0.0", "198.18.32.0", "198.18.40.0",
					   "198.18.44.0", "198.18.44.1" };
	static const __u32 len[] = { 16, 19, 21, 24, 32 };
	struct xdp_rl_stats before;
	struct env e;
	int i;

	if (env_open(&e, &(struct load_opts){ 0 }, "select rule too nested: load"))
		return;
	for (i = 0; i < 5; i++)
		put_rule4(&e, pfx[i], len[i],
			  (struct xdp_rl_rule){
				  .id = i, .action = XDP_RL_RULE_ALLOW, .select = { .syn = 1 } });
	live.layer[0].limit = 2;
	live.layer[0].window_ns = 3600 * SEC_NS;
	live.select = (struct xdp_rl_select){ .proto = IPPROTO_UDP };
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &ack, 4), 2,
		  "too nested: an ACK past %d rules is charged to the global 2/h, though it "
		  "selects UDP",
		  XDP_RL_SELECT_NEST + 1);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_UNSELECTED), 0,
		  "too nested: nothing passed as unselected");
	env_free(&e);
}
