// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_events.c - over-limit events (bpf/events.h): exactly one record per
 * window per layer, from the packet that took it over its limit, in the
 * fast path and the general path, per layer, under rules and --shared
 * budgets, with --bytes, for the --new-sources cap, and under two CPUs;
 * none without a reader's lease (but the over_limit counter always).
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"

#define EVS_MAX 256

struct evs {
	struct xdp_rl_event ev[EVS_MAX];
	int n;
};

static int ev_add(void *ctx, void *data, size_t size)
{
	struct evs *s = ctx;

	if (size >= sizeof(struct xdp_rl_event) && s->n < EVS_MAX)
		memcpy(&s->ev[s->n], data, sizeof(struct xdp_rl_event));
	s->n++;
	return 0;
}

/* The records in the ring now (consumed), into @s: how many, or -1. */
static int events_take(struct env *e, struct evs *s)
{
	struct ring_buffer *rb;

	s->n = 0;
	rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), ev_add, s, NULL);
	if (!rb)
		return -1;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return s->n;
}

/* A reader's lease that never runs out (0: none). */
static void lease(struct env *e, __u64 until_ns)
{
	struct xdp_rl_ev_lease l = { .until_ns = until_ns, .pid = 1 };
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(e->skel->maps.ev_lease), &zero, &l, 0);
}

/* One layer: the 4th packet of 3/10s takes the window over, once; the next window once more. */
UNIT_TEST(events_one_per_window)
{
	static const char desc[] = "events: 3/10s, 10 packets a window, two windows";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.30.1" });
	struct xdp_rl_stats before;
	struct evs s;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "events: load"))
		return;
	env_set(&e, 3, 10 * SEC_NS, 0);
	lease(&e, ~0ULL);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [passed, first window]", desc);
	ASSERT_EQ(events_take(&e, &s), 1, "%s [one record, first window]", desc);
	ASSERT_EQ(s.ev[0].key[0], addr4("198.18.30.1"), "%s [its key]", desc);
	ASSERT_EQ(s.ev[0].family, 4, "%s [family]", desc);
	ASSERT_EQ(s.ev[0].kind, XDP_RL_EV_SOURCE, "%s [kind]", desc);
	ASSERT_EQ(s.ev[0].layer, 0, "%s [layer]", desc);
	ASSERT_EQ(s.ev[0].limit, 3, "%s [limit]", desc);
	ASSERT_EQ(s.ev[0].window_ns, 10 * SEC_NS, "%s [window]", desc);
	ASSERT_EQ(s.ev[0].count, 4, "%s [count: the crossing packet's]", desc);
	ASSERT_EQ(s.ev[0].rule, XDP_RL_EV_NO_RULE, "%s [global limits]", desc);
	e.skel->bss->fake_now_ns += 10 * SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p, 10), 3, "%s [passed, second window]", desc);
	ASSERT_EQ(events_take(&e, &s), 1, "%s [one record, second window]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT), 2, "%s [over_limit]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_EVENTS_LOST), 0, "%s [lost]", desc);
	env_free(&e);
}

/* No lease, or one run out: counted, no record. */
UNIT_TEST(events_no_reader)
{
	static const char desc[] = "events: no reader: over_limit counts, the ring stays empty";
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.30.2" });
	struct xdp_rl_stats before;
	struct evs s;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "events: load"))
		return;
	env_set(&e, 3, 10 * SEC_NS, 0);
	stats(&e, &before);
	send_n(&e, &p, 10);
	lease(&e, 1); /* long run out */
	e.skel->bss->fake_now_ns += 10 * SEC_NS + XDP_RL_GRAIN;
	send_n(&e, &p, 10);
	ASSERT_EQ(events_take(&e, &s), 0, "%s [records]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT), 2, "%s [over_limit]", desc);
	env_free(&e);
}

/* Two layers: each goes over once, the layer that refused the crossing packet. */
UNIT_TEST(events_layers)
{
	static const struct xdp_rl_layer two[] = { { 3, SEC_NS }, { 5, 10 * SEC_NS } };
	static const char desc[] = "events: 3/1s + 5/10s";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.30.3" });
	struct xdp_rl_live live = live_of(2, two);
	struct evs s;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .layers = 2 }, "events: load with room for 2"))
		return;
	env_live(&e, &live);
	lease(&e, ~0ULL);
	send_n(&e, &a, 6);
	ASSERT_EQ(events_take(&e, &s), 1, "%s: 6 packets in the first second [records]", desc);
	ASSERT_EQ(s.ev[0].layer, 0, "%s [the 1s layer went over]", desc);
	ASSERT_EQ(s.ev[0].count, 4, "%s [its count]", desc);
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	send_n(&e, &a, 6);
	ASSERT_EQ(events_take(&e, &s), 1, "%s: 6 more the next second [records]", desc);
	ASSERT_EQ(s.ev[0].layer, 1, "%s [the 10s layer went over]", desc);
	ASSERT_EQ(s.ev[0].limit, 5, "%s [its limit]", desc);
	ASSERT_EQ(s.ev[0].count, 6, "%s [its count]", desc);
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	send_n(&e, &a, 6);
	ASSERT_EQ(events_take(&e, &s), 0, "%s: the 10s layer still over: nothing new", desc);
	env_free(&e);
}

/* A per-source rule's key and id; a --shared budget's one record for the prefix. */
UNIT_TEST(events_rules_shared)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	struct xdp_rl_rule own = {
		.id = 2, .action = XDP_RL_RULE_LIMIT, .nlayers = 1, .layer = { { 6, 10 * SEC_NS } }
	};
	struct xdp_rl_rule shared = { .id = 3,
				      .action = XDP_RL_RULE_LIMIT,
				      .nlayers = 1,
				      .layer = { { 4, 10 * SEC_NS } },
				      .flags = XDP_RL_RULE_F_SHARED };
	struct pkt ow1 = build(&(struct pkt_spec){ V4, "198.18.31.1" });
	struct pkt ow2 = build(&(struct pkt_spec){ V4, "198.18.31.2" });
	struct pkt sh1 = build(&(struct pkt_spec){ V4, "198.18.32.1" });
	struct pkt sh2 = build(&(struct pkt_spec){ V4, "198.18.32.2" });
	struct xdp_rl_live live = live_of(1, one);
	struct evs s;
	struct env e;

	if (env_open(&e, &(struct load_opts){ 0 }, "events: load"))
		return;
	if (rule4(&e, "198.18.31.0", 24, &own) || rule4(&e, "198.18.32.0", 24, &shared)) {
		UNIT_FAIL("events: rules: insert: %s", strerror(errno));
		env_free(&e);
		return;
	}
	live.nrules4 = 2;
	env_live(&e, &live);
	lease(&e, ~0ULL);
	send_n(&e, &ow1, 8);
	send_n(&e, &ow2, 8);
	ASSERT_EQ(events_take(&e, &s), 2, "events: per-source rule 6/10s: one record per source");
	ASSERT_EQ(s.ev[0].key[0], addr4("198.18.31.1"), "events: per-source rule [first key]");
	ASSERT_EQ(s.ev[1].key[0], addr4("198.18.31.2"), "events: per-source rule [second key]");
	ASSERT_EQ(s.ev[0].rule, 2, "events: per-source rule [rule id]");
	ASSERT_EQ(s.ev[0].limit, 6, "events: per-source rule [the rule's limit]");
	ASSERT_EQ(s.ev[0].count, 7, "events: per-source rule [count]");
	send_n(&e, &sh1, 3);
	send_n(&e, &sh2, 3);
	send_n(&e, &sh1, 3);
	ASSERT_EQ(events_take(&e, &s), 1, "events: --shared 4/10s: one record for the budget");
	ASSERT_EQ(s.ev[0].kind, XDP_RL_EV_SHARED, "events: --shared [kind]");
	ASSERT_EQ(s.ev[0].rule, 3, "events: --shared [rule id]");
	ASSERT_EQ(s.ev[0].count, 5, "events: --shared [count]");
	env_free(&e);
}

/* --bytes: the frame that takes the count from at most the limit to past it. */
UNIT_TEST(events_bytes)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.30.4", 0, 100 });
	struct evs s;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .bytes = 1 }, "events: load --bytes"))
		return;
	env_set(&e, 250, 10 * SEC_NS, 0);
	lease(&e, ~0ULL);
	ASSERT_EQ(send_n(&e, &p, 6), 2, "events: --bytes 250/10s, 100-byte frames [passed]");
	ASSERT_EQ(events_take(&e, &s), 1, "events: --bytes [records]");
	ASSERT_EQ(s.ev[0].count, 300, "events: --bytes [count: 200 + 100]");
	env_free(&e);
}

/* The --new-sources cap: one record when it goes over, family 0. */
UNIT_TEST(events_new_sources)
{
	static const struct xdp_rl_layer one[] = { { 100, 10 * SEC_NS } };
	struct xdp_rl_live live = live_of(1, one);
	char src[32];
	struct evs s;
	struct env e;
	int i;

	if (env_open(&e, &(struct load_opts){ 0 }, "events: load"))
		return;
	live.new_sources = (struct xdp_rl_layer){ 2, 10 * SEC_NS };
	live.on_full = XDP_RL_FULL_DROP;
	env_live(&e, &live);
	lease(&e, ~0ULL);
	for (i = 0; i < 6; i++) {
		struct pkt p;

		snprintf(src, sizeof(src), "198.18.33.%d", i + 1);
		p = build(&(struct pkt_spec){ V4, src });
		send_n(&e, &p, 1);
	}
	ASSERT_EQ(events_take(&e, &s), 1, "events: --new-sources 2/10s, 6 new sources [records]");
	ASSERT_EQ(s.ev[0].kind, XDP_RL_EV_NEW_SOURCES, "events: --new-sources [kind]");
	ASSERT_EQ(s.ev[0].count, 3, "events: --new-sources [count]");
	env_free(&e);
}

/*
 * Two CPUs on one key: one window goes over once, whichever CPU takes it
 * there; and windows turning over (the harness's ticker, on 198.18.6.1).
 */
UNIT_TEST(events_two_cpus)
{
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.6.1" });
	struct ticker t = { .limit = 1000, .window_ns = 1000000, .ticked_gen = ~0ULL };
	struct xdp_rl_stats before;
	__u64 over, opened;
	struct evs s;
	struct env e;
	int r, n;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ 0 }, "events: load"))
		return;
	env_set(&e, 12345, 3600 * SEC_NS, 0);
	e.skel->bss->fake_now_ns += 7200 * SEC_NS;
	lease(&e, ~0ULL);
	stats(&e, &before);
	r = hammer2(&e, &p, 20000, 5, NULL);
	ASSERT_EQ(r, 0, "events: 2 CPUs, one window [both threads ran]");
	ASSERT_EQ(events_take(&e, &s), 1, "events: 2 CPUs x 100000 on 12345/1h: one record");
	ASSERT_EQ(s.ev[0].count, 12346, "events: 2 CPUs, one window [count]");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT), 1,
		  "events: 2 CPUs, one window [over_limit]");
	/* Turnovers: every window the ticker ends is over its limit first. */
	t.e = &e;
	env_set(&e, t.limit, t.window_ns, 0);
	e.skel->bss->fake_now_ns += 7200 * SEC_NS;
	run(&e, &p, 1);
	stats(&e, &before);
	r = hammer2(&e, &p, 2000, 100, &t);
	opened = stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS) + 1;
	over = stat_delta(&e, &before, XDP_RL_STAT_OVER_LIMIT);
	n = events_take(&e, &s);
	ASSERT_EQ(r, 0, "events: 2 CPUs, turnovers [both threads ran]");
	ASSERT_EQ((__u64)n, over, "events: 2 CPUs, turnovers: a record per window over (%llu)",
		  (unsigned long long)over);
	ASSERT_GT(opened, 2, "events: 2 CPUs [windows turned over]");
	ASSERT_TRUE(over == opened || over == opened - 1,
		    "events: 2 CPUs, %llu windows: each went over once (%llu records)",
		    (unsigned long long)opened, (unsigned long long)over);
	env_free(&e);
}
