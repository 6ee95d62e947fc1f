// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_lru.c - what the LRU table (load --table lru, bpf/lru.h) does of its
 * own, whatever XDP_RL_TEST_TABLE says: an element evicted and given back
 * starts a fresh window, with no charge of before and a generation no
 * window had; fresh windows of another key are never charged; a flood of
 * new sources keeps the table bounded and the sources it keeps exact;
 * reset and charge through the program; the BTF `bpftool map dump` names
 * fields by, checked against the layout the program uses; and two CPUs
 * charging one key while the other evicts it over and over.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "admin.h"
#include "harness.h"

#define LRU	  (&(struct load_opts){ .table = TABLE_LRU, .sources = 16 })
#define LRU_ADMIN (&(struct load_opts){ .table = TABLE_LRU, .sources = 16, .admin = 1 })

/* Source number @i of a flood (198.19.0.0/16), as a frame. */
static struct pkt flood_n(__u32 i)
{
	char a[32];

	snprintf(a, sizeof(a), "198.19.%u.%u", i / 250, 1 + i % 250);
	return build(&(struct pkt_spec){ V4, a });
}

/* How many keys @t holds. */
static int count_one(const struct mt_entry *e, void *ctx)
{
	(void)e;
	++*(__u64 *)ctx;
	return 0;
}

static __u64 held(struct env *e)
{
	__u64 n = 0;

	mt_foreach(&e->t4, count_one, &n);
	return n;
}

/* An element evicted and inserted again starts afresh: no charge of before, a new generation. */
UNIT_TEST(lru_reinsert)
{
	static const char fresh[] = "lru: evicted and back: a fresh window";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.30.1" }), f;
	struct xdp_rl_stats before;
	struct mt_entry en;
	__u64 gen0, gen1;
	struct env e;
	int i;

	if (env_open(&e, LRU, "lru: load"))
		return;
	env_set(&e, 5, 3600 * SEC_NS, 0);
	ASSERT_EQ(send_n(&e, &a, 8), 5, "lru: 5 of 8 pass");
	if (!ASSERT_TRUE(entry4(&e, "198.18.30.1", TEST_LSID, &en),
			 "lru: the source has an element"))
		goto out;
	gen0 = xdp_rl_gen_of_count(en.w[0].count_gen);
	ASSERT_NE(gen0, 0, "lru: an open window's generation is never 0 (fresh windows')");
	ASSERT_EQ(count4(&e, "198.18.30.1"), 8, "lru: offered 8 (3 drops counted apart)");
	stats(&e, &before);
	for (i = 0; i < 64; i++) {
		f = flood_n(i);
		send_n(&e, &f, 1);
	}
	ASSERT_EQ(count4(&e, "198.18.30.1"), -1, "lru: 64 new sources through 16 evict it");
	ASSERT_LE(held(&e), 16, "lru: the table holds 16 at most");
	ASSERT_GE(stat_delta(&e, &before, XDP_RL_STAT_EVICTIONS), 64 - 16,
		  "lru: inserts into the full table are evictions");
	ASSERT_EQ(send_n(&e, &a, 8), 5, "%s [5 of 8 pass again]", fresh);
	if (ASSERT_TRUE(entry4(&e, "198.18.30.1", TEST_LSID, &en), "%s [an element]", fresh)) {
		gen1 = xdp_rl_gen_of_count(en.w[0].count_gen);
		ASSERT_NE(gen1, gen0, "%s [another generation]", fresh);
		ASSERT_NE(gen1, 0, "%s [not a fresh window's]", fresh);
		/*
		 * 5 passed, the packet that took it over (bpf/events.h), and
		 * the two dropped after it: a window's first drops are in its
		 * count (bpf/hot.h).
		 */
		ASSERT_EQ(xdp_rl_count(en.w[0].count_gen), 8, "%s [count]", fresh);
		ASSERT_EQ(count4(&e, "198.18.30.1"), 8, "%s [its drops are its own: 3]", fresh);
	}
out:
	env_free(&e);
}

/*
 * The race lru.h's E2 is about, set up by hand: the element of a key holds
 * fresh windows made for another key (as when the kernel gives it to that
 * key under a CPU still charging it for the old one). A packet of the old
 * key must not open them: it charges nothing, and its packet is one no
 * entry could be had for (a table error, passed).
 */
UNIT_TEST(lru_fresh_of_another)
{
	static const char desc[] = "lru: fresh windows of another key are not charged";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.30.2" });
	struct xdp_rl_stats before;
	struct xdp_rl_state w, *now;
	__u32 other[4] = { htonl(0xc6121e03) }; /* 198.18.30.3 */
	struct env e;

	if (env_open(&e, LRU, "lru: load"))
		return;
	env_set(&e, 5, 3600 * SEC_NS, 0);
	send_n(&e, &a, 1);
	xdp_rl_fresh(other, 0, TEST_LSID, XDP_RL_T_SRC4, TEST_SEED, &w.start_gen, &w.count_gen);
	if (!ASSERT_EQ(windows4_put(&e, "198.18.30.2", 0, &w), 0, "lru: windows set"))
		goto out;
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 1), 1, "%s [passed, as a table error]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS), 1, "%s [table error]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS), 0, "%s [nothing opened]", desc);
	now = windows4(&e, "198.18.30.2");
	if (ASSERT_TRUE(now, "%s [element]", desc)) {
		ASSERT_EQ(now->count_gen, w.count_gen, "%s [count word untouched]", desc);
		ASSERT_EQ(now->start_gen, w.start_gen, "%s [start word untouched]", desc);
	}
	/* Its own fresh windows, as an insert leaves them: the next packet opens them. */
	xdp_rl_fresh((__u32[4]){ htonl(0xc6121e02) }, 0, TEST_LSID, XDP_RL_T_SRC4, TEST_SEED,
		     &w.start_gen, &w.count_gen);
	windows4_put(&e, "198.18.30.2", 0, &w);
	ASSERT_EQ(send_n(&e, &a, 7), 5, "lru: its own fresh windows open: 5 of 7 pass");
out:
	env_free(&e);
}

/*
 * The kernel copies a new key's fresh windows into an element with plain
 * stores in no set order, while a CPU of the old key may still read it.
 * Half-way, (1) the old key's CPU sees the new key's fresh start beside its
 * own opened count: it must write nothing (an I5 "repair" of that start
 * would leave the new key's window unable to open); (2) the new key
 * finds its own fresh count beside a start another key's CPU wrote: it
 * opens its window all the same, and is limited from its first packet;
 * and (3) the old key's CPU sees its own open start beside the new key's
 * fresh count: the one-window path (limit_fast) adds to that count before
 * it can tell, and must take the add back, leaving the count as the copy
 * wrote it, or the new key's window could never open (E2).
 */
UNIT_TEST(lru_fresh_half_copied)
{
	static const char desc[] = "lru: a half-copied element";
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.30.4" });
	struct xdp_rl_stats before;
	struct xdp_rl_state w, *now, mine;
	__u32 other[4] = { htonl(0xc6121e05) }; /* 198.18.30.5 */
	struct env e;

	if (env_open(&e, LRU, "lru: load"))
		return;
	env_set(&e, 5, 3600 * SEC_NS, 0);
	send_n(&e, &a, 1);
	now = windows4(&e, "198.18.30.4");
	if (!ASSERT_TRUE(now, "%s [element]", desc))
		goto out;
	/* (1) Another key's fresh start beside this key's opened count. */
	xdp_rl_fresh(other, 0, TEST_LSID, XDP_RL_T_SRC4, TEST_SEED, &w.start_gen, &mine.count_gen);
	w.count_gen = now->count_gen;
	if (!ASSERT_EQ(windows4_put(&e, "198.18.30.4", 0, &w), 0, "lru: windows set"))
		goto out;
	stats(&e, &before);
	send_n(&e, &a, 1);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS), 1, "%s (1) [lost]", desc);
	now = windows4(&e, "198.18.30.4");
	if (ASSERT_TRUE(now, "%s [element]", desc))
		ASSERT_EQ(now->start_gen, w.start_gen, "%s (1) [the other key's start untouched]",
			  desc);
	/* (2) This key's fresh count beside a start a CPU of another key wrote. */
	xdp_rl_fresh((__u32[4]){ htonl(0xc6121e04) }, 0, TEST_LSID, XDP_RL_T_SRC4, TEST_SEED,
		     &mine.start_gen, &mine.count_gen);
	w.count_gen = mine.count_gen;
	w.start_gen = 7ULL << 16 | 3; /* an old start, generation 3 */
	windows4_put(&e, "198.18.30.4", 0, &w);
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 7), 5, "%s (2): its window opens: 5 of 7 pass", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS), 0, "%s (2) [no error]", desc);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_NEW_WINDOWS), 1, "%s (2) [opened]", desc);
	/* (3) This key's open start beside another key's fresh count. */
	now = windows4(&e, "198.18.30.4");
	if (!ASSERT_TRUE(now, "%s [element]", desc))
		goto out;
	w.start_gen = now->start_gen;
	xdp_rl_fresh(other, 0, TEST_LSID, XDP_RL_T_SRC4, TEST_SEED, &mine.start_gen, &w.count_gen);
	windows4_put(&e, "198.18.30.4", 0, &w);
	stats(&e, &before);
	send_n(&e, &a, 1);
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_TABLE_ERRORS), 1, "%s (3) [lost]", desc);
	now = windows4(&e, "198.18.30.4");
	if (ASSERT_TRUE(now, "%s [element]", desc)) {
		ASSERT_EQ(now->count_gen, w.count_gen, "%s (3) [the other key's count untouched]",
			  desc);
		ASSERT_EQ(now->start_gen, w.start_gen, "%s (3) [the start untouched]", desc);
	}
out:
	env_free(&e);
}

/*
 * A flood of 20 000 new sources through a table of 1 024, eight real
 * sources sending among them: the table holds 1 024 at most, and the real
 * sources, seen often, keep their windows: each passes exactly its limit.
 */
UNIT_TEST(lru_flood_keeps_the_seen)
{
	static const char desc[] = "lru: a flood through 1024 elements";
	struct pkt real[8], f;
	char addr[32];
	struct env e;
	int i, j, passed = 0, kept = 0;

	if (env_open(&e, &(struct load_opts){ .table = TABLE_LRU, .sources = 1024 }, "lru: load"))
		return;
	env_set(&e, 10, 3600 * SEC_NS, 0);
	for (j = 0; j < 8; j++) {
		snprintf(addr, sizeof(addr), "198.18.31.%d", j + 1);
		real[j] = build(&(struct pkt_spec){ V4, addr });
	}
	for (i = 0; i < 20000; i++) {
		f = flood_n(i);
		send_n(&e, &f, 1);
		if (i % 16 == 0)
			for (j = 0; j < 8; j++)
				passed += send_n(&e, &real[j], 1);
	}
	for (j = 0; j < 8; j++) {
		snprintf(addr, sizeof(addr), "198.18.31.%d", j + 1);
		kept += count4(&e, addr) == 20000 / 16;
	}
	ASSERT_LE(held(&e), 1024, "%s [bounded]", desc);
	ASSERT_EQ(kept, 8, "%s [the real sources kept their windows]", desc);
	ASSERT_EQ(passed, 8 * 10, "%s [each passed exactly its limit]", desc);
	env_free(&e);
}

/*
 * reset (the key keeps its place, its windows fresh), reset --count, charge
 * and reset --all, through the program, on an LRU table.
 */
UNIT_TEST(lru_admin)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.32.1" });
	struct xdp_rl_layer lay = { 5, 3600 * SEC_NS };
	__u32 k[4] = { htonl(0xc6122001) };
	struct xdp_rl_stats before;
	__u64 closed = 0;
	struct env e;

	if (env_open(&e, LRU_ADMIN, "lru: load"))
		return;
	env_set(&e, 5, 3600 * SEC_NS, 0);
	send_n(&e, &a, 7);
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 0, NULL), 1,
		  "lru: reset found the key");
	ASSERT_EQ(count4(&e, "198.18.32.1"), 0, "lru: reset: the key keeps an element, fresh");
	stats(&e, &before);
	ASSERT_EQ(send_n(&e, &a, 7), 5, "lru: reset: a fresh window, 5 of 7");
	ASSERT_EQ(stat_delta(&e, &before, XDP_RL_STAT_INSERTS), 0,
		  "lru: reset: the key is not a new source again");
	k[0] = htonl(0xc6122003);
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 0, NULL), 0,
		  "lru: reset of a key with none: nothing");
	k[0] = htonl(0xc6122001);
	ASSERT_EQ(admin_reset(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 3, &lay), 1,
		  "lru: reset --count 3");
	ASSERT_EQ(count4(&e, "198.18.32.1"), 3, "lru: reset --count 3: holds 3");
	ASSERT_EQ(send_n(&e, &a, 4), 2, "lru: reset --count 3: 2 of 4 pass");
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 10, &lay), 1,
		  "lru: charge 10");
	ASSERT_EQ(count4(&e, "198.18.32.1"), 17, "lru: charge 10: 7 + 10");
	k[0] = htonl(0xc6122002);
	ASSERT_EQ(admin_charge(&e.lim, PIN_SRC4, k, TEST_LSID, 0, 1, 2, &lay), 1,
		  "lru: charge of a source never seen");
	ASSERT_EQ(count4(&e, "198.18.32.2"), 2, "lru: charge opens its window, holding 2");
	ASSERT_EQ(admin_close_table(&e.lim, PIN_SRC4, 0, XDP_RL_MAX_LAYERS, &closed), 0,
		  "lru: reset --all");
	ASSERT_EQ(closed, 2, "lru: reset --all closed both keys' windows");
	ASSERT_EQ(held(&e), 2, "lru: reset --all: the keys keep their elements");
	ASSERT_EQ(count4(&e, "198.18.32.1") + count4(&e, "198.18.32.2"), 0,
		  "lru: reset --all: every window closed");
	ASSERT_EQ(send_n(&e, &a, 7), 5, "lru: reset --all: a new window, 5 of 7");
	env_free(&e);
}

/* The offset of member @name of struct @t in bits, or -1. */
static long member_bits(const struct btf *b, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = btf_members(t);
	int i;

	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(b, m->name_off), name))
			return btf_member_bit_offset(t, i);
	return -1;
}

/* The BTF `bpftool map dump` shows an element by is the layout the program charges. */
UNIT_TEST(lru_btf)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), layers;
	const struct btf_type *t;
	struct btf *b = NULL;
	struct env e;
	int v6;

	for (layers = 1; layers <= XDP_RL_MAX_LAYERS; layers += 3) {
		if (env_open(&e,
			     &(struct load_opts){
				     .table = TABLE_LRU, .sources = 16, .layers = (int)layers },
			     "lru: load"))
			return;
		for (v6 = 0; v6 < 2; v6++) {
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			if (!ASSERT_EQ(bpf_obj_get_info_by_fd(v6 ? e.t6.fd : e.t4.fd, &info, &len),
				       0, "lru btf: map info") ||
			    !ASSERT_NE(info.btf_id, 0, "lru btf: the table has BTF"))
				break;
			b = btf__load_from_kernel_by_id(info.btf_id);
			if (!ASSERT_TRUE(b, "lru btf: load it"))
				break;
			t = btf__type_by_id(b, info.btf_value_type_id);
			ASSERT_EQ(t->size, xdp_rl_lru_value_size(v6, layers),
				  "lru btf: value size");
			ASSERT_EQ(member_bits(b, t, "key"), 0, "lru btf: key");
			ASSERT_EQ(member_bits(b, t, "seen"), xdp_rl_lru_seen_off(v6) * 8,
				  "lru btf: seen (IPv%d, %u layers)", v6 ? 6 : 4, layers);
			ASSERT_EQ(member_bits(b, t, "window"), xdp_rl_lru_head(v6) * 8,
				  "lru btf: window");
			ASSERT_EQ(member_bits(b, t, "drops"),
				  xdp_rl_lru_drops_off(v6, layers, 0) * 8, "lru btf: drops");
			ASSERT_EQ(member_bits(b, t, "remote"),
				  xdp_rl_lru_remote_off(v6, layers, 0) * 8, "lru btf: remote");
			t = btf__type_by_id(b, info.btf_key_type_id);
			ASSERT_EQ(t->size, xdp_rl_lru_key_size(v6), "lru btf: key size");
			btf__free(b);
			b = NULL;
		}
		btf__free(b);
		env_free(&e);
	}
}

/*
 * Two CPUs, one key: CPU 0 sends its packets, limit 1 a window, while CPU 1
 * floods new sources through a table of 16, so the key's element is taken
 * from under CPU 0 over and over (mid-charge, some of the time). The key
 * may lose its window whenever it loses its element, never pass more: each
 * packet it passes opened a window, or found none to be had (a table error).
 */
struct flooder {
	struct env *e;
	int err;
	volatile int stop;
};

static void *flood_fn(void *arg)
{
	struct flooder *f = arg;
	struct walk wk;
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (walk_open(&wk, f->e, 0xc6130000, 4096)) {
		f->err = errno;
		return NULL;
	}
	for (i = 0; i < 200 && !f->stop; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = wk.frame.b,
			    .data_size_in = wk.frame.len, .repeat = 2000);
		if (bpf_prog_test_run_opts(wk.fd, &o))
			f->err = errno;
	}
	walk_close(&wk);
	return NULL;
}

UNIT_TEST(lru_reuse_under_a_charge)
{
	struct pkt a = build(&(struct pkt_spec){ V4, "198.18.33.1" });
	struct flooder fl = { 0 };
	struct xdp_rl_stats before, after;
	__u64 passed, opened, errors, mine = 0;
	struct mt_entry en;
	pthread_t th;
	cpu_set_t set;
	struct env e;
	int i;

	if (need_two_cpus() || env_open(&e, LRU, "lru: load"))
		return;
	env_set(&e, 1, 3600 * SEC_NS, 0);
	fl.e = &e;
	stats(&e, &before);
	pthread_create(&th, NULL, flood_fn, &fl);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (i = 0; i < 200; i++)
		mine += run(&e, &a, 500) >= 0;
	fl.stop = 1;
	pthread_join(th, NULL);
	stats(&e, &after);
	passed = after.c[XDP_RL_STAT_PASSED] - before.c[XDP_RL_STAT_PASSED];
	opened = after.c[XDP_RL_STAT_NEW_WINDOWS] - before.c[XDP_RL_STAT_NEW_WINDOWS];
	errors = after.c[XDP_RL_STAT_TABLE_ERRORS] - before.c[XDP_RL_STAT_TABLE_ERRORS];
	ASSERT_EQ(fl.err, 0, "lru reuse: the flood ran");
	ASSERT_LE(passed, opened + errors,
		  "lru reuse: passed %llu <= %llu windows opened + %llu table errors",
		  (unsigned long long)passed, (unsigned long long)opened,
		  (unsigned long long)errors);
	ASSERT_GE(after.c[XDP_RL_STAT_EVICTIONS] - before.c[XDP_RL_STAT_EVICTIONS], 10000,
		  "lru reuse: the flood evicted (%llu)",
		  (unsigned long long)(after.c[XDP_RL_STAT_EVICTIONS] -
				       before.c[XDP_RL_STAT_EVICTIONS]));
	/* A window that the key still has holds only what it was charged: at most its limit, passed. */
	if (entry4(&e, "198.18.33.1", TEST_LSID, &en) && xdp_rl_gen_of_count(en.w[0].count_gen))
		ASSERT_GE(xdp_rl_count(en.w[0].count_gen), 1,
			  "lru reuse: its window counts its own");
	ASSERT_EQ(mine, 200, "lru reuse: its 200 runs of 500 packets ran");
	env_free(&e);
}
