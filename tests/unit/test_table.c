// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_table.c - the source table: eviction order (the bucket table's: the
 * slot seen longest ago, slots whose windows are over going first), where
 * new keys go (their first bucket, while it is mostly empty), closing
 * windows from user space, IPv6 slots; and under two CPUs, on either
 * table: the same 4 000 new sources inserted at once (one entry each, exact
 * limits), and 64 sources churning through a table of 4 (no key twice, no
 * window passing more than it may). The LRU table's own are in test_lru.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>

#include "admin.h"
#include "harness.h"

/* The keys of a table, as read. */
struct keys {
	__u32 k[16384][5];
	__u64 n;
};

static int key_note(const struct mt_entry *e, void *ctx)
{
	struct keys *ks = ctx;

	if (ks->n < sizeof(ks->k) / sizeof(ks->k[0])) {
		memcpy(ks->k[ks->n], e->k, 16);
		ks->k[ks->n][4] = e->lsid;
	}
	ks->n++;
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 5 * sizeof(__u32));
}

/* Whether every key of @t is in one entry only; *live counts the entries that hold one. */
static int table_unique(const struct mtable *t, __u64 *live)
{
	static struct keys ks;
	__u64 i;

	ks.n = 0;
	*live = 0;
	if (mt_foreach(t, key_note, &ks) || ks.n > sizeof(ks.k) / sizeof(ks.k[0]))
		return 0;
	*live = ks.n;
	qsort(ks.k, ks.n, sizeof(ks.k[0]), key_cmp);
	for (i = 1; i < ks.n; i++)
		if (!key_cmp(ks.k[i - 1], ks.k[i]))
			return 0;
	return 1;
}

/* Source number @i (up to 16 000) in 198.18.64.0/18, and its address. */
static struct pkt src_n(__u32 i, char *addr, size_t len)
{
	char a[32];

	snprintf(a, sizeof(a), "198.18.%u.%u", 64 + i / 250, 1 + i % 250);
	if (addr)
		snprintf(addr, len, "%s", a);
	return build(&(struct pkt_spec){ V4, a });
}

/* 4 sources, 2 buckets: every key may take any of the 8 slots, an LRU of 8. */
UNIT_TEST(table)
{
	static const char eight[] = "table: 8 sources take the 8 slots, no eviction";
	static const char lru[] = "table: a 9th source evicts the one seen longest ago, "
				  "not the first inserted (seen since)";
	static const char over[] = "table: a source whose window is over gives up its slot "
				   "first, though seen last; not counted as an eviction";
	static const char reset[] =
		"table: after its windows are closed from user space, a source starts afresh";
	char addr[10][32];
	struct xdp_rl_stats before;
	struct pkt p[10];
	struct env e;
	__u32 key[4] = {};
	__u64 t0, live = 0;
	int i, kept;

	if (env_open(&e, &(struct load_opts){ .sources = 4, .admin = 1 },
		     "table: load with 2 buckets"))
		return;
	if (!env_only(&e, XDP_RL_TABLE_BUCKETS,
		      "the bucket table's eviction order (lru_*: the LRU's)")) {
		env_free(&e);
		return;
	}
	for (i = 0; i < 10; i++)
		p[i] = src_n(i, addr[i], sizeof(addr[i]));
	env_set(&e, 3, 3600 * SEC_NS, 0);
	stats(&e, &before);
	for (i = 0; i < 8; i++) {
		send_n(&e, &p[i], 1);
		e.skel->bss->fake_now_ns += 10 * TICK_NS;
	}
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), 8, "%s [inserts]", eight);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS), 0, "%s [evictions]", eight);
	ASSERT_TRUE(table_unique(&e.t4, &live), "%s [every key in one slot]", eight);
	ASSERT_EQ(live, 8, "%s [live slots]", eight);
	send_n(&e, &p[0], 1); /* seen again: now the second is the least recent */
	e.skel->bss->fake_now_ns += 10 * TICK_NS;
	send_n(&e, &p[8], 1);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS), 1, "%s [evictions]", lru);
	ASSERT_EQ(count4(&e, addr[1]), -1, "%s [the second is gone]", lru);
	ASSERT_EQ(count4(&e, addr[0]), 2, "%s [the first stays]", lru);
	ASSERT_EQ(count4(&e, addr[8]), 1, "%s [the 9th is in]", lru);

	/* Windows that are over go first, and that is not an eviction. */
	e.skel->bss->fake_now_ns += 7200 * SEC_NS;
	env_set(&e, 3, 10 * SEC_NS, 0);
	t0 = e.skel->bss->fake_now_ns;
	send_n(&e, &p[0], 1); /* its window ends at t0 + 10s */
	e.skel->bss->fake_now_ns = t0 + 5 * SEC_NS;
	for (i = 2; i < 9; i++)
		send_n(&e, &p[i], 1); /* theirs at t0 + 15s */
	e.skel->bss->fake_now_ns = t0 + 9 * SEC_NS;
	send_n(&e, &p[0], 1); /* seen last, window still t0 + 10s */
	e.skel->bss->fake_now_ns = t0 + 11 * SEC_NS;
	stats(&e, &before);
	send_n(&e, &p[9], 1);
	for (kept = 0, i = 2; i < 9; i++)
		kept += count4(&e, addr[i]) == 1;
	ASSERT_EQ(kept, 7, "%s [the 7 others keep their slots]", over);
	ASSERT_EQ(count4(&e, addr[0]), -1, "%s [the one whose window is over is gone]", over);
	ASSERT_EQ(count4(&e, addr[9]), 1, "%s [the new one is in]", over);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS), 0, "%s [evictions]", over);

	/* What `reset` does: the windows close, the next packet opens a new one. */
	send_n(&e, &p[2], 3);			    /* 4 of 3: over the limit */
	memcpy(&key[0], p[2].b + ETH_HLEN + 12, 4); /* its source address */
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, key, TEST_LSID, 0, 1, 0, NULL), 1,
		  "%s [the program found the key]", reset);
	ASSERT_EQ(send_n(&e, &p[2], 1), 1, "%s [passed]", reset);
	ASSERT_EQ(count4(&e, addr[2]), 1, "%s [count]", reset);
	env_free(&e);
}

/* Where a table's keys are: in their first bucket or their second (or neither). */
struct placed {
	const struct mtable *t;
	__u64 first, second, neither;
};

static int key_placed(const struct mt_entry *m, void *ctx)
{
	struct placed *pl = ctx;
	__u32 b1, b2, b = m->id / XDP_RL_BUCKET_SLOTS;

	xdp_rl_bucket_pair(xdp_rl_hash(m->k, pl->t->wide, m->lsid, pl->t->seed), pl->t->nbuckets,
			   &b1, &b2);
	if (b == b1)
		pl->first++;
	else if (b == b2)
		pl->second++;
	else
		pl->neither++;
	return 0;
}

/*
 * A new key goes to its first bucket while that is mostly empty
 * (bpf/buckets.h FIRST_KEEPS): a lookup reads the second only after the
 * first, a second miss in a row. A table holding a third of its sources
 * has about one key in twenty in its second bucket; choosing the emptier
 * bucket every time put one in five there.
 */
UNIT_TEST(table_first_bucket)
{
	static const char desc[] = "table: 1 000 sources in a table for 3 000 (a third): "
				   "nearly every key in its first bucket";
	struct placed pl = {};
	struct env e;
	__u32 i;

	if (env_open(&e, &(struct load_opts){ .sources = 3000 }, "table: load for 3 000"))
		return;
	if (!env_only(&e, XDP_RL_TABLE_BUCKETS, "the bucket table's placement")) {
		env_free(&e);
		return;
	}
	env_set(&e, 3, 3600 * SEC_NS, 0);
	for (i = 0; i < 1000; i++) {
		struct pkt p = src_n(i, NULL, 0);

		send_n(&e, &p, 1);
	}
	pl.t = &e.t4;
	ASSERT_EQ(mt_foreach(&e.t4, key_placed, &pl), 0, "%s [the table read]", desc);
	ASSERT_EQ(pl.first + pl.second, 1000, "%s [every source in one of its buckets]", desc);
	ASSERT_EQ(pl.neither, 0, "%s [none elsewhere]", desc);
	/*
	 * Random keys: about 52 in their second; the emptier bucket every time,
	 * about 197; the first every time, none until a first bucket is full.
	 */
	ASSERT_TRUE(pl.second >= 10 && pl.second <= 100,
		    "%s [in their second bucket: %llu of 1000, 10 to 100]", desc,
		    (unsigned long long)pl.second);
	env_free(&e);
}

/* IPv6 slots hold the key beside the tag. */
UNIT_TEST(table_ipv6)
{
	static const char desc[] =
		"table: IPv6, 9 sources into 8 slots: 2 of 3 pass each, one eviction";
	struct xdp_rl_stats before;
	char addr[32];
	struct pkt p;
	struct env e;
	__u64 live = 0;
	int i, ok;

	if (env_open(&e, &(struct load_opts){ .sources = 4, .v6_prefix = 128 },
		     "table: load IPv6 with 2 buckets"))
		return;
	if (!env_only(&e, XDP_RL_TABLE_BUCKETS,
		      "the bucket table's 8 slots (lru_ipv6: the LRU's)")) {
		env_free(&e);
		return;
	}
	env_set(&e, 2, 3600 * SEC_NS, 0);
	stats(&e, &before);
	for (ok = 0, i = 0; i < 9; i++) {
		snprintf(addr, sizeof(addr), "2001:2::%x", i + 1);
		p = build(&(struct pkt_spec){ V6, addr });
		ok += send_n(&e, &p, 3);
		e.skel->bss->fake_now_ns += 10 * TICK_NS;
	}
	ASSERT_EQ(ok, 18, "%s [passed]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), 9, "%s [inserts]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS), 1, "%s [evictions]", desc);
	ASSERT_TRUE(table_unique(&e.t6, &live), "%s [every key in one slot]", desc);
	ASSERT_EQ(live, 8, "%s [live slots]", desc);
	env_free(&e);
}

enum { NEW = 4000, CHURN = 64 };
static const __u32 walk_base = 0xc6124000; /* 198.18.64.0 */

/* Both CPUs meet each new source at once: one slot each, exact limits. */
UNIT_TEST(table_concurrent_inserts)
{
	struct xdp_rl_stats before;
	__u64 live = 0;
	char addr[32], desc[160];
	struct walk wk;
	struct env e;
	__u32 i, a;
	int r, bad = 0, unique;

	if (need_two_cpus() || env_open(&e, &(struct load_opts){ .sources = 8192 }, "table: load"))
		return;
	if (walk_open(&wk, &e, walk_base, NEW)) {
		UNIT_FAIL("table: load the source walker: %s", strerror(errno));
		env_free(&e);
		return;
	}
	env_set(&e, 3, 3600 * SEC_NS, 0);
	stats(&e, &before);
	r = walk2(&wk, 5 * NEW);
	for (i = 0; i < NEW; i++) {
		a = htonl(walk_base + i);
		inet_ntop(AF_INET, &a, addr, sizeof(addr));
		bad += count4(&e, addr) != 10;
	}
	unique = table_unique(&e.t4, &live);
	snprintf(desc, sizeof(desc),
		 "table: 2 CPUs x %d new sources at once: one slot each, "
		 "each passes 3 of 10 (%d counts off, %llu slots live)",
		 NEW, bad, (unsigned long long)live);
	ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
	ASSERT_EQ(bad, 0, "%s [counts]", desc);
	ASSERT_TRUE(unique, "%s [every key in one slot]", desc);
	ASSERT_EQ(live, NEW, "%s [live slots]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), NEW, "%s [inserts]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_PASSED), 3 * NEW, "%s [passed]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS), 0, "%s [table errors]", desc);
	walk_close(&wk);
	env_free(&e);
}

/*
 * Churn: 64 sources through a table of 4 (8 slots; or 4 LRU elements) from
 * both CPUs, CPU 1 half a lap ahead, so entries change hands under packets
 * of their old keys. With a limit of 1 a window passes one packet: every
 * pass is a window opened (or a packet whose entry went under it, passed as
 * a table error).
 */
UNIT_TEST(table_churn)
{
	struct xdp_rl_stats before;
	__u64 passed, opened, errors, live = 0, evictions;
	char desc[200];
	struct walk wk;
	struct env e;
	int r, unique;

	if (need_two_cpus() ||
	    env_open(&e, &(struct load_opts){ .sources = 4 }, "table: load with 2 buckets"))
		return;
	if (walk_open(&wk, &e, walk_base, CHURN)) {
		UNIT_FAIL("table: load the source walker: %s", strerror(errno));
		env_free(&e);
		return;
	}
	walk_start(&wk, 1, CHURN / 2);
	env_set(&e, 1, 3600 * SEC_NS, 0);
	stats(&e, &before);
	r = walk2(&wk, 200 * CHURN);
	passed = stat_delta(&e, &before, XDP_RL_STAT_PASSED);
	opened = stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS);
	errors = stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS);
	evictions = stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS);
	unique = table_unique(&e.t4, &live);
	snprintf(desc, sizeof(desc),
		 "table: churn on 2 CPUs: passed %llu <= %llu windows + %llu "
		 "lost slots; %llu evictions; every key in one slot at most",
		 (unsigned long long)passed, (unsigned long long)opened, (unsigned long long)errors,
		 (unsigned long long)evictions);
	ASSERT_EQ(r, 0, "%s [both threads ran]", desc);
	ASSERT_LE(passed, opened + errors, "%s [passed]", desc);
	ASSERT_GT(evictions, 1000, "%s [evictions]", desc);
	ASSERT_TRUE(unique, "%s [every key in one slot]", desc);
	/*
	 * The bucket table never empties a slot. The kernel's LRU hash may end
	 * with one free: an insert that evicted an element for its node and
	 * then lost to another CPU's insert of the same key gives the node back
	 * to its CPU's free list, while the other CPU goes on evicting.
	 */
	if (e.table == XDP_RL_TABLE_LRU)
		ASSERT_LE(live, mt_capacity(&e.t4), "%s [live elements]", desc);
	else
		ASSERT_EQ(live, mt_capacity(&e.t4), "%s [live slots]", desc);
	walk_close(&wk);
	env_free(&e);
}
