// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_newsrc.c - the cap on new sources (--new-sources N/DUR) and what
 * happens to a source it refuses (--on-table-full drop, pass, aggregate).
 */
#include <stdio.h>
#include <arpa/inet.h>

#include "admin.h"
#include "harness.h"

UNIT_TEST(new_sources)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	static const char capped[] =
		"new sources: cap 2/10s, drop: the third new source is dropped, not inserted";
	static const char aggregate[] =
		"new sources: aggregate: two refused sources share their /24's window of 3";
	static const char again[] = "new sources: next window of the cap: inserted again";
	struct xdp_rl_live live = live_of(1, one);
	struct pkt p[6];
	struct xdp_rl_stats before;
	char addr[32];
	struct env e;
	int i, ok;

	for (i = 0; i < 6; i++) {
		snprintf(addr, sizeof(addr), "198.18.12.%d", i + 1);
		p[i] = build(&(struct pkt_spec){ V4, addr });
	}
	if (env_open(&e, &(struct load_opts){ 0 }, "new sources: load"))
		return;
	live.new_sources = (struct xdp_rl_layer){ 2, 10 * SEC_NS };
	live.on_full = XDP_RL_FULL_DROP;
	env_live(&e, &live);
	stats(&e, &before);
	ok = send_n(&e, &p[0], 1) + send_n(&e, &p[1], 1) + send_n(&e, &p[2], 1);
	ASSERT_EQ(ok, 2, "%s [passed]", capped);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_REFUSED_INSERTS), 1, "%s [refused]", capped);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), 2, "%s [inserted]", capped);
	ASSERT_EQ(count4(&e, "198.18.12.3"), -1, "%s [no slot]", capped);
	ASSERT_EQ(send_n(&e, &p[0], 4), 2, "new sources: a source in the table keeps its window");

	live.on_full = XDP_RL_FULL_PASS;
	env_live(&e, &live);
	ASSERT_EQ(send_n(&e, &p[3], 5), 5, "new sources: on-table-full pass: passes, unlimited");

	live.on_full = XDP_RL_FULL_AGGREGATE;
	env_live(&e, &live);
	stats(&e, &before);
	ok = send_n(&e, &p[4], 2) + send_n(&e, &p[5], 2);
	ASSERT_EQ(ok, 3, "%s [passed]", aggregate);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_AGGREGATED), 4, "%s [aggregated]", aggregate);

	e.skel->bss->fake_now_ns += 10 * SEC_NS + XDP_RL_GRAIN;
	ASSERT_EQ(send_n(&e, &p[5], 1), 1, "%s [passed]", again);
	ASSERT_EQ(count4(&e, "198.18.12.6"), 1, "%s [count]", again);
	env_free(&e);
}

/*
 * Issue 21: a slot given by `charge` (or `reset --count`) of a source not
 * in the table bypassed --new-sources. It counts in the cap's window now,
 * never refused by it (an operator asked): with a cap of 2, two charged
 * sources leave no room for a source from the wire.
 */
UNIT_TEST(new_sources_admin)
{
	static const struct xdp_rl_layer one[] = { { 3, 10 * SEC_NS } };
	struct xdp_rl_live live = live_of(1, one);
	struct pkt p = build(&(struct pkt_spec){ V4, "198.18.13.9" });
	__u32 k1[4] = { htonl(0xc6120d01) }, k2[4] = { htonl(0xc6120d02) };
	struct xdp_rl_stats before;
	struct env e;

	if (env_open(&e, &(struct load_opts){ .admin = 1 }, "new sources admin: load"))
		return;
	live.new_sources = (struct xdp_rl_layer){ 2, 10 * SEC_NS };
	live.on_full = XDP_RL_FULL_DROP;
	env_live(&e, &live);
	stats(&e, &before);
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k1, TEST_LSID, 0, 1, 1, one), 1,
		  "new sources admin: charge gives 198.18.13.1 a slot");
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k2, TEST_LSID, 0, 1, 1, one), 1,
		  "new sources admin: reset --count gives 198.18.13.2 one, past nothing");
	ASSERT_EQ(
		send_n(&e, &p, 1), 0,
		"new sources admin: the cap of 2 is spent: a new source from the wire is dropped");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_REFUSED_INSERTS), 1,
		  "new sources admin: ... counted as refused");
	env_free(&e);
}
