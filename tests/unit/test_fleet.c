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

	if (env_open(&e, &(struct load_opts){ 0 }, "fleet: load"))
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
	ASSERT_EQ(xdp_rl_count(windows4(&e, "198.18.40.1")->count_gen), 6,
		  "fleet: the window counts what passed here only");

	live.flags &= ~XDP_RL_F_FLEET;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 5), 4,
		  "fleet: out of fleet mode the share is not consulted: 6 of 10");
	env_free(&e);
}
