// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_capture.c - `xdp-rl capture`'s datapath (bpf/capture.h): while a
 * lease runs, each frame is copied as it starts and sent once the CPU's
 * next packet starts, with the verdict it moved the counters by; the
 * filters and the sampling; a lease that ran out is cleared, and nothing
 * is copied then.
 */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"

#define RECS_MAX 64

struct recs {
	struct xdp_rl_cap_meta m[RECS_MAX];
	__u8 first[RECS_MAX][64];
	int n;
};

static int rec_add(void *ctx, void *data, size_t size)
{
	struct recs *s = ctx;

	if (size >= sizeof(struct xdp_rl_cap_meta) && s->n < RECS_MAX) {
		memcpy(&s->m[s->n], data, sizeof(struct xdp_rl_cap_meta));
		memcpy(s->first[s->n], (const __u8 *)data + sizeof(struct xdp_rl_cap_meta),
		       size - sizeof(struct xdp_rl_cap_meta) < 64 ?
			       size - sizeof(struct xdp_rl_cap_meta) :
			       64);
	}
	s->n++;
	return 0;
}

/* The records in the ring now (consumed): how many, or -1. */
static int recs_take(struct env *e, struct recs *s)
{
	struct ring_buffer *rb;

	memset(s, 0, sizeof(*s));
	rb = ring_buffer__new(bpf_map__fd(e->skel->maps.cap_ring), rec_add, s, NULL);
	if (!rb)
		return -1;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return s->n;
}

static __u64 coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * SEC_NS + (__u64)ts.tv_nsec;
}

/* Capture settings: every verdict, each frame whole, gen 7, a lease of a minute. */
static struct xdp_rl_capture settings(void)
{
	struct xdp_rl_capture c = {
		.until_ns = coarse_now() + 60 * SEC_NS,
		.gen = 7,
		.reasons = (1U << XDP_RL_CAP_REASONS) - 1,
		.sample = 1,
		.snaplen = XDP_RL_CAP_SNAPLEN_MAX,
	};
	return c;
}

static void capture_set(struct env *e, const struct xdp_rl_capture *c)
{
	__u32 zero = 0;

	bpf_map_update_elem(bpf_map__fd(e->skel->maps.capture), &zero, c, 0);
}

/* One CPU: a CPU's records go out at its next packet. */
static void one_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

UNIT_TEST(capture_verdicts_in_order)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.1" });
	struct xdp_rl_capture c = settings();
	struct recs r;
	struct env e;
	int i;

	one_cpu();
	if (env_open(&e, &(struct load_opts){ 0 }, "capture: load"))
		return;
	env_set(&e, 3, 10 * SEC_NS, 0);
	capture_set(&e, &c);
	for (i = 0; i < 5; i++)
		run(&e, &a, 1);
	/* The fifth is copied, and waits for the next packet. */
	ASSERT_EQ(recs_take(&e, &r), 4, "capture: 5 judged, 4 sent");
	for (i = 0; i < 4 && i < r.n; i++) {
		ASSERT_EQ(r.m[i].gen, 7, "capture: the record is this capture's");
		ASSERT_EQ(r.m[i].reason, i < 3 ? XDP_RL_CAP_PASSED : XDP_RL_CAP_DROPPED,
			  "capture: 3 passed, then dropped");
		ASSERT_EQ(r.m[i].action, i < 3 ? XDP_PASS : XDP_DROP, "capture: the action");
		ASSERT_EQ(r.m[i].cap_len, a.len, "capture: the whole frame");
		ASSERT_EQ(r.m[i].pkt_len, a.len, "capture: its length");
		ASSERT_EQ(memcmp(r.first[i], a.b, a.len < 64 ? a.len : 64), 0,
			  "capture: the frame's bytes");
	}
	env_free(&e);
}

UNIT_TEST(capture_filters_and_sampling)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.1" });
	struct pkt b = build(&(struct pkt_spec){ V4, "198.18.3.1" });
	struct xdp_rl_capture c = settings();
	struct recs r;
	struct env e;
	int i;

	one_cpu();
	if (env_open(&e, &(struct load_opts){ 0 }, "capture: load"))
		return;
	env_set(&e, 2, 10 * SEC_NS, 0);
	c.reasons = 1U << XDP_RL_CAP_DROPPED;
	c.src_family = 4;
	c.src_len = 24;
	inet_pton(AF_INET, "198.18.2.0", &c.src_addr[0]);
	c.src_mask[0] = htonl(0xffffff00);
	c.sample = 2;
	capture_set(&e, &c);
	for (i = 0; i < 7; i++) {
		run(&e, &a, 1);
		run(&e, &b, 1);
	}
	run(&e, &b, 1);
	/* .2.1: 2 passed, 5 dropped; of the 5, the 1st, 3rd and 5th. */
	ASSERT_EQ(recs_take(&e, &r), 3, "capture: dropped from 198.18.2.0/24, 1 in 2");
	for (i = 0; i < r.n && i < 3; i++)
		ASSERT_EQ(r.m[i].reason, XDP_RL_CAP_DROPPED, "capture: only drops");
	env_free(&e);
}

UNIT_TEST(capture_lease_out_is_cleared)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.1" });
	struct xdp_rl_capture c = settings(), got;
	__u32 zero = 0;
	struct recs r;
	struct env e;

	one_cpu();
	if (env_open(&e, &(struct load_opts){ 0 }, "capture: load"))
		return;
	env_set(&e, 3, 10 * SEC_NS, 0);
	c.until_ns = coarse_now() - SEC_NS;
	capture_set(&e, &c);
	run(&e, &a, 1);
	run(&e, &a, 1);
	bpf_map_lookup_elem(bpf_map__fd(e.skel->maps.capture), &zero, &got);
	ASSERT_EQ(got.until_ns, 0, "capture: a lease that ran out is cleared by a packet");
	ASSERT_EQ(recs_take(&e, &r), 0, "capture: nothing sent after it");
	env_free(&e);
}
