// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_layers.c - several windows per key (--layer N/DUR ...): a packet
 * passes only if every layer admits it, and one a later layer refuses is
 * taken back from the earlier ones. (Layers under two CPUs: test_concurrency.c.)
 */
#include "harness.h"

UNIT_TEST(layers)
{
	static const struct xdp_rl_layer two[] = { { 3, SEC_NS }, { 5, 10 * SEC_NS } };
	static const char first[] =
		"layers: 3/1s + 5/10s: 3 of 4 pass; the 1s layer counts 4, "
		"the 10s layer 3 (a packet refused by the first is not charged to the second)";
	static const char next[] = "layers: next second, the 10s layer admits 2 more; the 2 it "
				   "refuses are taken back from the 1s layer (count 2, not 4)";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.7.1" });
	struct xdp_rl_live live = live_of(2, two);
	struct env e;

	if (env_open(&e, &(struct load_opts){ .layers = 2 }, "layers: load with room for 2"))
		return;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &a, 4), 3, "%s [passed]", first);
	ASSERT_EQ(count4_layer(&e, "198.18.7.1", 0), 4, "%s [1s layer]", first);
	ASSERT_EQ(count4_layer(&e, "198.18.7.1", 1), 3, "%s [10s layer]", first);
	e.skel->bss->fake_now_ns += SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &a, 4), 2, "%s [passed]", next);
	ASSERT_EQ(count4_layer(&e, "198.18.7.1", 0), 2, "%s [1s layer]", next);
	ASSERT_EQ(count4_layer(&e, "198.18.7.1", 1), 7, "%s [10s layer]", next);
	e.skel->bss->fake_now_ns += 10 * SEC_NS;
	ASSERT_EQ(send_n(&e, &a, 4), 3, "layers: both windows over: 3 pass again");
	env_free(&e);
}
