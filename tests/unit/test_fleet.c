// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_fleet.c - a fleet's share of a window (include/xdp_rl.h, `remote`):
 * with XDP_RL_F_FLEET a packet passes only while the window's own count and
 * what the other servers counted in the same window are within the limit.
 * The share is written as the fleet agent writes it, through the program
 * (admin_remote: the `remote` map's word, or an LRU element's own).
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "admin.h"
#include "harness.h"
#include "sources.h"

/* Write the fleet's share of layer 0 of IPv4 key @key: 1, or what admin_remote said. */
static int remote_set(struct env *e, const char *key, __u64 word)
{
	__u32 k[4] = {};

	inet_pton(AF_INET, key, &k[0]);
	return admin_remote(&e->lim, PIN_SRC4, k, TEST_LSID, 0, word);
}

UNIT_TEST(fleet_remote)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.40.1" });
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_ALIGNED | XDP_RL_F_FLEET };
	struct xdp_rl_state *w;
	__u64 word, gen;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "fleet: load"))
		return;
	live.layer[0].limit = 10;
	live.layer[0].window_ns = 3600 * SEC_NS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 1), 1, "fleet: the first packet opens the window");
	w = windows4(&e, "198.18.40.1");
	if (!ASSERT_TRUE(w, "fleet: the source has a slot")) {
		env_free(&e);
		return;
	}
	gen = xdp_rl_gen_of_count(w->count_gen);
	word = ((gen + 1) & 0xffff) << XDP_RL_REMOTE_BITS | 7;
	ASSERT_EQ(remote_set(&e, "198.18.40.1", word), 1,
		  "fleet: the share of another window written");
	ASSERT_EQ(send_n(&e, &a, 3), 3, "fleet: a share of another window counts nothing");
	word = gen << XDP_RL_REMOTE_BITS | 4;
	ASSERT_EQ(remote_set(&e, "198.18.40.1", word), 1,
		  "fleet: the share of this window written");
	ASSERT_EQ(send_n(&e, &a, 5), 2, "fleet: 4 here and 4 elsewhere of 10: 2 more pass");
	ASSERT_EQ(count4(&e, "198.18.40.1"), 9,
		  "fleet: offered here: 9, the share elsewhere apart");
	ASSERT_EQ(xdp_rl_count(windows4(&e, "198.18.40.1")->count_gen), 7,
		  "fleet: the window counts what passed here only, and the packet that took "
		  "it over (bpf/events.h)");

	live.flags &= ~XDP_RL_F_FLEET;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 5), 3,
		  "fleet: out of fleet mode the share is not consulted: 7 of 10");
	env_free(&e);
}

/*
 * Make the next window the key's state opens be of generation @gen: the
 * bucket table's turnover takes the state's generation + 1; an LRU
 * table's, the limiter's counter's next (bpf/window.h).
 */
static int next_gen_is(struct env *e, const char *key, __u64 gen)
{
	struct xdp_rl_state w, *in = windows4(e, key);
	__u32 k = XDP_RL_LRU_GEN;
	__u64 prev = (gen + XDP_RL_GEN_MASK) & XDP_RL_GEN_MASK, ctr = gen - 1;

	if (!in)
		return -1;
	if (e->table == XDP_RL_TABLE_LRU)
		return bpf_map_update_elem(bpf_map__fd(e->skel->maps.lru), &k, &ctr, 0);
	w = *in;
	w.count_gen = prev << XDP_RL_COUNT_BITS | xdp_rl_count(w.count_gen);
	w.start_gen = xdp_rl_start_ns(w.start_gen) | prev;
	return windows4_put(e, key, 0, &w);
}

/*
 * Issue 21: a fleet share carries a 16-bit generation and was never
 * cleared when its window ended. When the key's windows came round to
 * that generation again (65 536 windows of a slot; on an LRU table, any
 * turnover when the limiter's counter comes round: p = 1/65 535), the
 * stale share refused the source for a whole window. Now whoever opens a
 * window empties a word still tagged with its generation.
 */
UNIT_TEST(fleet_stale_share)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.41.1" });
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_FLEET };
	struct xdp_rl_state *w;
	__u64 g0;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "fleet stale: load"))
		return;
	live.layer[0].limit = 10;
	live.layer[0].window_ns = 10 * SEC_NS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 1), 1, "fleet stale: the first packet opens window g0");
	w = windows4(&e, "198.18.41.1");
	if (!ASSERT_TRUE(w, "fleet stale: the source has a slot")) {
		env_free(&e);
		return;
	}
	g0 = xdp_rl_gen_of_count(w->count_gen);
	ASSERT_EQ(remote_set(&e, "198.18.41.1", g0 << XDP_RL_REMOTE_BITS | 10), 1,
		  "fleet stale: the fleet used the whole of g0 elsewhere");
	ASSERT_EQ(send_n(&e, &a, 2), 0, "fleet stale: ... so g0 passes nothing more");
	e.skel->bss->fake_now_ns += 11 * SEC_NS;
	ASSERT_EQ(send_n(&e, &a, 3), 3, "fleet stale: the next window: g0's share counts nothing");
	ASSERT_EQ(next_gen_is(&e, "198.18.41.1", g0), 0,
		  "fleet stale: the state's windows come round to g0 (generations wrap)");
	e.skel->bss->fake_now_ns += 11 * SEC_NS;
	ASSERT_EQ(send_n(&e, &a, 10), 10,
		  "fleet stale: a window of generation g0 again: the old share counts nothing");
	ASSERT_EQ(xdp_rl_gen_of_count(windows4(&e, "198.18.41.1")->count_gen), g0,
		  "fleet stale: (it is g0 again)");
	env_free(&e);
}

/*
 * The share of an IPv6 key, as the agent writes it: its word is at the
 * src6 table's place in `remote` (a constant base once folded to 0 wrote
 * every IPv6 share into src4's words), or in the key's LRU element.
 */
UNIT_TEST(fleet_remote_ipv6)
{
	struct pkt a = build(&(struct pkt_spec){ V6, "2001:2:0:42::1" });
	struct xdp_rl_live live = { .nlayers = 1, .flags = XDP_RL_F_FLEET };
	__u32 k[4] = {};
	struct mt_entry en;
	struct env e;
	__u64 gen;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "fleet ipv6: load"))
		return;
	live.layer[0].limit = 10;
	live.layer[0].window_ns = 3600 * SEC_NS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 1), 1, "fleet ipv6: the first packet opens the window");
	inet_pton(AF_INET6, "2001:2:0:42::", k);
	if (!ASSERT_EQ(mt_get(&e.t6, k, TEST_LSID, &en), 1, "fleet ipv6: the key has an entry")) {
		env_free(&e);
		return;
	}
	gen = xdp_rl_gen_of_count(en.w[0].count_gen);
	ASSERT_EQ(admin_remote(&e.lim, PIN_SRC6, k, TEST_LSID, 0, gen << XDP_RL_REMOTE_BITS | 6), 1,
		  "fleet ipv6: the share of this window written");
	ASSERT_EQ(send_n(&e, &a, 5), 3, "fleet ipv6: 1 here and 6 elsewhere of 10: 3 more pass");
	env_free(&e);
}
