/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * harness.h - the XDP program under BPF_PROG_TEST_RUN, for the tests of
 * build/test_prog (tests/unit/test_*.c but test_user*.c).
 *
 * Each test loads its own program into a fresh struct env with env_open(),
 * on a test clock (cfg_fake_clock: the time is whatever fake_now_ns says,
 * so nothing depends on lucky timing), publishes settings with env_set() or
 * env_live() as `xdp-rl set` does (user/limiter.c's limiter_publish), sends
 * frames built with build(), and reads the verdicts, the counters and the
 * source table. Two-CPU tests run threads pinned to CPUs 0 and 1 with
 * hammer2() (one key) or walk2() (many sources, the bench's wrapper).
 *
 * Loading needs CAP_BPF and CAP_NET_ADMIN; without them a test skips
 * (a failure when CI is set).
 *
 * Every test runs on the table XDP_RL_TEST_TABLE names (buckets, the
 * default, or lru: `make unit TABLE=lru`), unless its load_opts asks for one;
 * a test of what only one table does skips on the other (env_only).
 *
 * A test of a new area goes in a file of its own, tests/unit/test_AREA.c:
 *
 *	#include "harness.h"
 *
 *	UNIT_TEST(area_what)
 *	{
 *		struct pkt a = build(&(struct pkt_spec){ V4, "198.18.2.1" });
 *		struct env e;
 *
 *		if (env_open(&e, &(struct load_opts){ 0 }, "area: load"))
 *			return;
 *		env_set(&e, 5, 10 * SEC_NS, 0);
 *		ASSERT_EQ(send_n(&e, &a, 8), 5, "area: 8 offered, limit 5 -> 5 pass");
 *		env_free(&e);
 *	}
 *
 * and runs alone with `make unit T=area_what`.
 */
#ifndef XDP_RL_UNIT_HARNESS_H
#define XDP_RL_UNIT_HARNESS_H

#include <linux/types.h>

#include "xdp_rl.h"
#include "xdp_rl.skel.h"
#include "limiter.h"
#include "mtable.h"
#include "kept.h"
#include "unit.h"

#define SEC_NS 1000000000ULL
/* The global limits' limit set in these tests (env_live gives it to settings without one). */
#define TEST_LSID 1
#define TICK_NS	  4000000ULL /* the test clock's tick (HZ 250) */

/* ---- Packets --------------------------------------------------------------- */

struct pkt {
	__u8 b[256];
	__u32 len;
};

enum { V4, V6 };

struct pkt_spec {
	int family;
	const char *src;
	int vlans;  /* 0, 1 (802.1Q) or 2 (802.1ad + 802.1Q) */
	__u32 size; /* 0: the smallest; else pad to this frame length */
	/* The transport (for the selectors): */
	int proto; /* 0: UDP; else IPPROTO_TCP, _UDP, _ICMP, _ICMPV6 */
	__u16 dport;
	__u8 tcp_flags;	    /* TCP: e.g. 0x02 SYN, 0x12 SYN+ACK */
	int later_fragment; /* a fragment after the first: no transport header */
	int first_cut;	    /* a first fragment with 8 bytes of transport header: no TCP flags */
	int ext;	    /* IPv6: destination options headers before the transport */
};

void put16(__u8 *p, __u16 v);
/* Ethernet (and VLAN tags), IPv4 or IPv6 from s->src, UDP. */
struct pkt build(const struct pkt_spec *s);

/* ---- The program under test ----------------------------------------------- */

struct env {
	struct xdp_rl *skel;
	int prog_fd;
	struct mtable t4, t6; /* src4 and src6, mapped (or, LRU tables, opened) */
	int table;	      /* enum xdp_rl_table_kind */
	/* LRU tables: the copy windows4 reads into (an element cannot be mapped). */
	struct xdp_rl_state snap[XDP_RL_MAX_LAYERS];
	/*
	 * The limiter xdp-rl would open, with the skeleton's config map, admin
	 * entry point and tables: what env_live publishes through, and what
	 * user/admin.h asks the program through.
	 */
	struct limiter lim;
	struct kept_key load; /* how it was loaded (kept.h) */
};

/* load_opts' table: as XDP_RL_TEST_TABLE says, or this one. */
enum { TABLE_TESTED, TABLE_BUCKETS, TABLE_LRU };

struct load_opts {
	int bytes;
	int v4_prefix, v6_prefix; /* default 32 and 64 */
	int layers;		  /* room per source, default 1 */
	int table;		  /* TABLE_* */
	__u32 sources;		  /* per source table, default 1024 */
	/*
	 * The program reads CLOCK_MONOTONIC (bpf_ktime_get_ns), not the test
	 * clock: for what needs the real clock moving under two CPUs.
	 */
	int real_clock;
	__u32 key; /* enum xdp_rl_key_kind (--key), default the source */
	/*
	 * The program's cfg_hot_after (bpf/hot.h): drops a full window counts
	 * in its count before the hot entries; 0: XDP_RL_HOT_AFTER, as loaded
	 * by xdp-rl; HOT_AFTER_NONE: none, every drop apart.
	 */
	int hot_after;
	/*
	 * The admin program too (bpf/admin.h: reset, charge, close, fleet
	 * words; user/admin.c). Off by default: it is as large as xdp_rl, and
	 * its load doubles a test's time in a TCG guest (make test-kernels).
	 * A test that needs it and goes without fails (EBADF).
	 */
	int admin;
};

#define HOT_AFTER_NONE (-1)

/* The program's cfg_hot_after under @o. */
__u32 load_hot_after(const struct load_opts *o);

/* The hash key of the tables in these tests: fixed, so runs are repeatable. */
#define TEST_SEED 0x5eed5eed12345678ULL

/* Load the program with @o, the clock at 1000 s: 0, or -1 with errno set. */
int env_load(struct env *e, const struct load_opts *o);
void env_free(struct env *e);
/*
 * env_open(e, o, what): env_load for a test: 0, or -1 after saying why: a
 * skip without CAP_BPF and CAP_NET_ADMIN, else a failure described as
 * "@what: <error>". (Variadic only so that @o may be a compound literal.)
 */
#define env_open(e, ...) env_open_at(__FILE__, __LINE__, e, __VA_ARGS__)
int env_open_at(const char *file, int line, struct env *e, const struct load_opts *o,
		const char *what);

/*
 * Publish live settings as xdp-rl does (limiter_publish): the spare slot,
 * then the flip. Settings without a limit set get TEST_LSID, and the
 * longest window is worked out as live_finish does.
 */
void env_live(struct env *e, const struct xdp_rl_live *live);
/* One layer, as --limit and --window give. */
void env_set(struct env *e, __u64 limit, __u64 window_ns, __u32 flags);
/* Live settings of @n layers. */
struct xdp_rl_live live_of(int n, const struct xdp_rl_layer *lay);

/* The verdict of one run of @p (@repeat times), or -errno. */
int run(struct env *e, const struct pkt *p, __u32 repeat);
/* Send @n frames; return how many passed. */
int send_n(struct env *e, const struct pkt *p, int n);
const char *verdict(int v);

/* An IPv4 address, as in the packet. */
__u32 addr4(const char *s);
/*
 * Rule @r for @prefix/@len in rules4, its --shared budget closed; a rule
 * without a limit set gets one of its own (100 + id), as xdp-rl gives it.
 * 0, or -1 with errno set.
 */
int rule4(struct env *e, const char *prefix, int len, struct xdp_rl_rule *r);

/* The counters, summed over the CPUs. */
void stats(struct env *e, struct xdp_rl_stats *sum);
/* How much counter @which grew since @before. */
__u64 stat_delta(struct env *e, const struct xdp_rl_stats *before, int which);

/* The table the tests run on unless one asks for another (XDP_RL_TEST_TABLE). */
int tested_table(void);
/* "buckets" or "lru". */
const char *table_kind_name(int table);
/*
 * Whether a test of what table @table alone does may run in @e: 1, or 0
 * after skipping it (say why in @why).
 */
int env_only(struct env *e, int table, const char *why);

/*
 * The windows of an IPv4 key (the masked address) under the global limits,
 * or NULL: in place in a bucket table; a copy of an LRU element's, read now
 * (write with windows4_put).
 */
struct xdp_rl_state *windows4(struct env *e, const char *key);
/* ... or under limit set @lsid. */
struct xdp_rl_state *windows4_in(struct env *e, const char *key, __u32 lsid);
/* Write window @layer of an IPv4 key under the global limits (a test's own setup): 0, or -1. */
int windows4_put(struct env *e, const char *key, int layer, const struct xdp_rl_state *w);
/* The IPv4 key's entry, copied (mtable.h), under limit set @lsid: 1, 0 if it has none. */
int entry4(struct env *e, const char *key, __u32 lsid, struct mt_entry *out);
/* The count stored for an IPv4 key in layer @layer (or 0), or -1 if it has no slot. */
long long count4_layer(struct env *e, const char *key, int layer);
long long count4(struct env *e, const char *key);
/*
 * The drops counted apart (bpf/hot.h) for the generation layer @layer of an
 * IPv4 key under limit set @lsid has now (a rate's: its episode's), or -1 if
 * it has no slot.
 */
long long drops4_layer(struct env *e, const char *key, __u32 lsid, int layer);

/* ---- Rates (bpf/rate.h) ---------------------------------------------------- */

/*
 * The rate layer --rate @n/@dur_ns --burst @burst, filled by
 * xdp_rl_rate_fill (a test failure if it refuses them: all 0).
 */
struct xdp_rl_layer rate_layer(__u64 n, __u64 dur_ns, __u64 burst);

/* ---- Two CPUs -------------------------------------------------------------- */

/* 0 if CPUs 0 and 1 are online; else -1 after skipping the test. */
int need_two_cpus(void);

/*
 * Moves the test clock one window on once the window of layer @layer of
 * 198.18.6.1 has reached @limit, and not again until a packet has turned
 * it over (its generation changed).
 */
struct ticker {
	struct env *e;
	__u64 limit, window_ns;
	__u64 ticked_gen, ticks;
	int layer; /* whose windows the ticker turns over */
};

/*
 * Threads on CPUs 0 and 1 each run @p @rounds times @repeat; the first
 * also steps @t (if not NULL) between its rounds. 0, or an errno.
 */
int hammer2(struct env *e, const struct pkt *p, __u32 repeat, __u32 rounds, struct ticker *t);

/*
 * Many sources in one BPF_PROG_TEST_RUN call: the bench's wrapper
 * (tests/bench/wrap.bpf.c) gives each run of the frame the next of @n
 * sources from @base and tail-calls xdp-rl. One call per thread, because
 * every call makes the kernel wait for an RCU grace period.
 */
struct bench_wrap;

struct walk {
	struct bench_wrap *w;
	int fd;
	struct pkt frame;
};

int walk_open(struct walk *wk, struct env *e, __u32 base, __u32 n);
void walk_close(struct walk *wk);
/* The counter of CPU @cpu in the walk: where it starts in the @n sources. */
void walk_start(struct walk *wk, int cpu, __u64 at);
/* CPUs 0 and 1 each run @repeat frames through the walk, at once. 0, or an errno. */
int walk2(struct walk *wk, __u32 repeat);

#endif
