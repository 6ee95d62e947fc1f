// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_fleet.c - the fleet agent's logic without Redis or a kernel
 * (built into build/test_user): user/fleet.h's keys, choice of windows and
 * bookkeeping (Redis's protocol and the connection's address and back-off:
 * test_user_resp.c, test_user_redis.c), run against source tables made in
 * memory and a Redis played by the test (INCRBY, GET, EXPIRE on a table of
 * keys), so that two agents sharing one "Redis" can be followed command
 * by command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "fleet.h"
#include "redis.h"
#include "resp.h"
#include "unit.h"

#define SEC_NS 1000000000ULL

/* ---- fleet: the pure parts ------------------------------------------------------------ */

UNIT_TEST(fleet_key)
{
	char buf[128];
	struct fleet f;
	__u32 k[4] = {};

	ASSERT_EQ(fleet_key(buf, sizeof(buf), "web", "all", SEC_NS, "198.51.100.7/32", 1763916130),
		  (int)strlen("xdp-rl:web:all:1s:198.51.100.7/32:1763916130"),
		  "fleet_key: its length");
	ASSERT_STREQ(buf, "xdp-rl:web:all:1s:198.51.100.7/32:1763916130",
		     "fleet_key: a source under the global limits");
	fleet_key(buf, sizeof(buf), "web", "rule=198.51.100.0/24", 1500 * 1000000ULL,
		  "198.51.100.7/32", 7);
	ASSERT_STREQ(buf, "xdp-rl:web:rule=198.51.100.0/24:1500ms:198.51.100.7/32:7",
		     "fleet_key: under a rule, a window of 1.5 s");
	fleet_key(buf, sizeof(buf), "web", "shared", 60 * SEC_NS, "198.19.0.0/16", 29398602);
	ASSERT_STREQ(buf, "xdp-rl:web:shared:1m:198.19.0.0/16:29398602",
		     "fleet_key: a --shared rule's budget");
	ASSERT_EQ(fleet_key(buf, 20, "web", "all", SEC_NS, "198.51.100.7/32", 1), -1,
		  "fleet_key: a key that does not fit is refused, not cut");

	fleet_init(&f, "web", 0, 1);
	f.v4_prefix = 24;
	f.v6_prefix = 64;
	f.link_local = XDP_RL_LL_ADDRESS;
	inet_pton(AF_INET, "198.51.100.0", k);
	fleet_who(&f, XDP_RL_T_SRC4, k, buf, sizeof(buf));
	ASSERT_STREQ(buf, "198.51.100.0/24", "fleet_who: a source key, as --v4-prefix masks it");
	fleet_who(&f, XDP_RL_T_AGG4, k, buf, sizeof(buf));
	ASSERT_STREQ(buf, "agg=198.51.100.0/24", "fleet_who: an aggregate");
	inet_pton(AF_INET, "169.254.3.4", k);
	fleet_who(&f, XDP_RL_T_SRC4, k, buf, sizeof(buf));
	ASSERT_STREQ(buf, "169.254.3.4/32", "fleet_who: a link-local source keyed per address");
	inet_pton(AF_INET6, "2001:db8:1:2::", k);
	fleet_who(&f, XDP_RL_T_SRC6, k, buf, sizeof(buf));
	ASSERT_STREQ(buf, "2001:db8:1:2::/64", "fleet_who: an IPv6 key, as inet_ntop writes it");
	fleet_free(&f);
}

UNIT_TEST(fleet_window_number)
{
	__u64 w = SEC_NS, n = 1763916130ULL;

	/* Aligned starts are rounded up to a grain of 65.536 us. */
	ASSERT_EQ(fleet_window_number(n * w + XDP_RL_GRAIN - 1, 0, w), n,
		  "fleet_window_number: a start a grain late is still its window");
	ASSERT_EQ(fleet_window_number(n * w + 37 * SEC_NS + 5000, -37 * (__s64)SEC_NS, w), n,
		  "fleet_window_number: CLOCK_TAI 37 s ahead of Unix time");
	ASSERT_EQ(fleet_window_number(XDP_RL_GRAIN, 0, 1000000), 0ULL,
		  "fleet_window_number: a window at the epoch starts a grain late: number 0");
	ASSERT_EQ(fleet_window_number(n * w, 0, 60 * w), n / 60,
		  "fleet_window_number: minutes since the epoch");
	ASSERT_EQ(fleet_ttl_s(SEC_NS), 11ULL, "fleet_ttl_s: 1 s and the margin");
	ASSERT_EQ(fleet_ttl_s(1500 * 1000000ULL), 12ULL, "fleet_ttl_s: rounded up");
}

UNIT_TEST(fleet_parse_fraction)
{
	static const struct {
		const char *in;
		__u32 ppm;
	} ok[] = { { "0.1", 100000 }, { "10%", 100000 },   { "1", 1000000 },  { "0", 0 },
		   { ".5", 500000 },  { "100%", 1000000 }, { "0.000001", 1 }, { "2.5%", 25000 } };
	static const char *const bad[] = { "",	 "1.5",	      "101%", "abc",  "0.1x",
					   "5.", "0.0000001", "%",    "-0.1", "1e-1" };
	__u32 v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 7;
		ASSERT_STREQ(fleet_parse_fraction(ok[i].in, &v), NULL, "fleet_parse_fraction: '%s'",
			     ok[i].in);
		ASSERT_EQ(v, ok[i].ppm, "fleet_parse_fraction: '%s' in millionths", ok[i].in);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(fleet_parse_fraction(bad[i], &v) != NULL,
			    "fleet_parse_fraction: '%s' is refused", bad[i]);
	ASSERT_EQ(fleet_threshold(200, 100000), 20ULL, "fleet_threshold: 0.1 of 200");
	ASSERT_EQ(fleet_threshold(15, 100000), 2ULL, "fleet_threshold: 1.5, rounded up");
	ASSERT_EQ(fleet_threshold(1000, 0), 1ULL, "fleet_threshold: 0: any count at all");
	ASSERT_EQ(fleet_threshold(XDP_RL_LIMIT_MAX, 1000000), XDP_RL_LIMIT_MAX,
		  "fleet_threshold: the largest limit, whole: no overflow");
	ASSERT_STREQ(fleet_group_ok("web-eu.1_a"), NULL, "fleet_group_ok: a group name");
	ASSERT_TRUE(fleet_group_ok("a:b") && fleet_group_ok("") && fleet_group_ok("a b"),
		    "fleet_group_ok: ':', empty and spaces are refused");
}

UNIT_TEST(fleet_heaviest)
{
	struct fleet f;
	struct fleet_cand c = {};
	__u64 seen = 0;
	size_t i;

	fleet_init(&f, "web", 0, 4);
	for (i = 0; i < 100; i++) {
		c.id = i;
		c.weight = (i * 37) % 100; /* each weight once, in scattered order */
		fleet_consider(&f, &c);
	}
	ASSERT_EQ(f.nheap, (size_t)4, "fleet_consider: at most --max-synced are kept");
	ASSERT_EQ(f.left_out, 96ULL, "fleet_consider: the others are counted as left out");
	for (i = 0; i < f.nheap; i++)
		seen |= 1ULL << (f.heap[i].weight - 96);
	ASSERT_EQ(seen, 0xfULL, "fleet_consider: the four heaviest (96..99) are the ones kept");
	fleet_free(&f);
}

/* ---- fleet: rounds against tables in memory and a Redis played by the test ------------ */

#define LSID	 5
#define LIMIT	 100
#define START_NS (1763916130ULL * SEC_NS + XDP_RL_GRAIN)
#define NUMBER	 1763916130ULL

/* A source table of @nbuckets buckets, one layer, IPv4, in memory. */
static void table_make(struct mtable *t, __u32 nbuckets)
{
	memset(t, 0, sizeof(*t));
	t->layers = 1;
	t->slot_size = xdp_rl_slot_size(0, 1);
	t->bucket_size = XDP_RL_BUCKET_SLOTS * t->slot_size;
	t->nbuckets = nbuckets;
	t->mem = calloc(nbuckets, t->bucket_size);
}

/* Slot @i holds @addr, its window generation @gen counting @count since START_NS. */
static void slot_set(struct mtable *t, __u64 i, const char *addr, __u64 gen, __u64 count)
{
	struct xdp_rl_slot *s = mt_slot(t, i);
	struct xdp_rl_state *w = mt_windows(t, s);
	__u32 a;

	inet_pton(AF_INET, addr, &a);
	s->tag = ((__u64)a << 32) | ((__u64)LSID << 2) | XDP_RL_TAG_LIVE;
	w->start_gen = (START_NS & ~XDP_RL_GEN_MASK) | gen;
	w->count_gen = (gen << XDP_RL_COUNT_BITS) | count;
}

/* An agent on its own table, of the global limits LIMIT per 1 s, syncing above 0.1. */
struct agent {
	struct fleet f;
	struct redis r;
	struct fleet_set set;
};

static void agent_make(struct agent *a, __u32 nbuckets, __u32 max_synced)
{
	fleet_init(&a->f, "web", 100000, max_synced);
	table_make(&a->f.t[XDP_RL_T_SRC4], nbuckets);
	a->f.nwords = (__u64)nbuckets * XDP_RL_BUCKET_SLOTS;
	a->f.remote = calloc(a->f.nwords, sizeof(__u64));
	a->f.v4_prefix = 32;
	a->f.v6_prefix = 64;
	memset(&a->set, 0, sizeof(a->set));
	a->set.ls.lsid = LSID;
	a->set.ls.n = 1;
	a->set.ls.lay[0].limit = LIMIT;
	a->set.ls.lay[0].window_ns = SEC_NS;
	snprintf(a->set.scope, sizeof(a->set.scope), "all");
	a->f.sets = malloc(sizeof(a->set));
	memcpy(a->f.sets, &a->set, sizeof(a->set));
	a->f.nsets = 1;
	redis_init(&a->r);
}

static void agent_free(struct agent *a)
{
	free(a->f.t[XDP_RL_T_SRC4].mem);
	a->f.t[XDP_RL_T_SRC4].mem = NULL;
	free(a->f.remote);
	a->f.remote = NULL;
	fleet_free(&a->f);
	redis_free(&a->r);
}

/* The Redis the test plays: keys and their values and TTLs. */
struct fake_key {
	char name[128];
	long long v;
	long long ttl; /* -1: none */
};

struct fake {
	struct fake_key k[64];
	size_t n;
	int fail_incr; /* answer INCRBY with an error */
	__u64 commands;
};

static struct fake_key *fake_find(struct fake *db, const char *name, int make)
{
	size_t i;

	for (i = 0; i < db->n; i++)
		if (!strcmp(db->k[i].name, name))
			return &db->k[i];
	if (!make || db->n == 64)
		return NULL;
	snprintf(db->k[db->n].name, sizeof(db->k[0].name), "%s", name);
	db->k[db->n].v = 0;
	db->k[db->n].ttl = -1;
	return &db->k[db->n++];
}

/*
 * Run every command queued on @a's connection against @db, handing each
 * reply to the agent as Redis would, in order. Returns the commands run.
 */
static size_t fake_run(struct fake *db, struct agent *a)
{
	struct resp_buf *out = &a->r.out;
	char argv[3][160], text[32];
	struct resp_reply rep, arg;
	struct fake_key *k;
	size_t off = 0, done = 0;
	long n, used;
	int argc, i;

	while (off < out->len) {
		/* "*N\r\n" then N bulk strings. */
		n = resp_parse(out->p + off, out->len - off, &rep);
		if (!ASSERT_TRUE(n > 0 && rep.type == RESP_ARRAY && rep.n <= 3,
				 "fake redis: a command is an array of at most 3 strings"))
			break;
		used = strchr(out->p + off, '\n') - (out->p + off) + 1;
		argc = rep.n;
		for (i = 0; i < argc; i++) {
			used += resp_parse(out->p + off + used, out->len - off - used, &arg);
			snprintf(argv[i], sizeof(argv[i]), "%.*s", (int)arg.len, arg.s);
		}
		off += n;
		memset(&rep, 0, sizeof(rep));
		if (!strcmp(argv[0], "INCRBY") && db->fail_incr) {
			rep.type = RESP_ERROR;
			rep.s = "ERR refused";
			rep.len = strlen(rep.s);
		} else if (!strcmp(argv[0], "INCRBY")) {
			k = fake_find(db, argv[1], 1);
			k->v += atoll(argv[2]);
			rep.type = RESP_INT;
			rep.n = k->v;
		} else if (!strcmp(argv[0], "GET")) {
			k = fake_find(db, argv[1], 0);
			rep.type = k ? RESP_BULK : RESP_NIL;
			if (k) {
				rep.len = snprintf(text, sizeof(text), "%lld", k->v);
				rep.s = text;
			}
		} else if (!strcmp(argv[0], "EXPIRE")) {
			k = fake_find(db, argv[1], 0);
			if (k)
				k->ttl = atoll(argv[2]);
			rep.type = RESP_INT;
			rep.n = !!k;
		} else {
			UNIT_FAIL("fake redis: unexpected command %s", argv[0]);
			break;
		}
		fleet_reply(&rep, done++, &a->f);
	}
	db->commands += done;
	out->len = 0;
	a->r.queued = 0;
	return done;
}

/* One round of @a at @now: plan, then @db answers. The commands it took. */
static long round_at(struct agent *a, struct fake *db, __u64 now)
{
	long n = fleet_plan(&a->f, now, &a->r);

	if (n > 0)
		ASSERT_EQ(fake_run(db, a), (size_t)n, "round: every command queued is answered");
	return n;
}

/* The remote word of slot @i: its generation and count. */
static __u64 remote_of(const struct agent *a, __u64 i, __u64 *gen)
{
	*gen = a->f.remote[i] >> XDP_RL_REMOTE_BITS;
	return a->f.remote[i] & XDP_RL_REMOTE_MASK;
}

#define KEY "xdp-rl:web:all:1s:198.51.100.7/32:1763916130"

UNIT_TEST(fleet_two_agents)
{
	struct agent a, b;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2, gen;
	struct fake_key *k;

	agent_make(&a, 4, 16);
	agent_make(&b, 4, 16);
	slot_set(&a.f.t[0], 3, "198.51.100.7", 9, 60);
	slot_set(&b.f.t[0], 6, "198.51.100.7", 2, 30);

	ASSERT_EQ(round_at(&a, &db, now), 2L, "two agents: A pushes 60: INCRBY and EXPIRE");
	k = fake_find(&db, KEY, 0);
	if (!ASSERT_TRUE(k, "two agents: the key is %s", KEY))
		goto out;
	ASSERT_EQ(k->v, 60LL, "two agents: the key holds A's 60");
	ASSERT_EQ(k->ttl, 11LL, "two agents: its TTL is the window and 10 s");
	ASSERT_EQ(remote_of(&a, 3, &gen), 0ULL, "two agents: A: nobody else counted");
	ASSERT_EQ(gen, 9ULL, "two agents: A's word names its window's generation");

	ASSERT_EQ(round_at(&b, &db, now), 2L, "two agents: B pushes its 30");
	ASSERT_EQ(k->v, 90LL, "two agents: the fleet counted 90");
	ASSERT_EQ(remote_of(&b, 6, &gen), 60ULL, "two agents: B learns A's 60");
	ASSERT_EQ(gen, 2ULL, "two agents: B's word names B's generation, not A's");

	ASSERT_EQ(round_at(&a, &db, now), 1L, "two agents: A, nothing new: one GET");
	ASSERT_EQ(remote_of(&a, 3, &gen), 30ULL, "two agents: A learns B's 30");

	slot_set(&a.f.t[0], 3, "198.51.100.7", 9, 65);
	ASSERT_EQ(round_at(&a, &db, now), 1L, "two agents: A's 5 more: INCRBY alone (TTL set)");
	ASSERT_EQ(k->v, 95LL, "two agents: only the 5 new are added");
	ASSERT_EQ(remote_of(&a, 3, &gen), 30ULL, "two agents: A's own count is not the others'");

	/* B's window is full with the fleet's part (30 + 70 >= 100) and it counted nothing new. */
	slot_set(&b.f.t[0], 6, "198.51.100.7", 2, 35);
	round_at(&b, &db, now);
	b.f.book[0].remote = 70;
	ASSERT_EQ(round_at(&b, &db, now), 0L, "two agents: a full window, nothing new: no command");

	/* Below --sync-above (10 of 100), never synced: nothing. */
	slot_set(&a.f.t[0], 5, "198.51.100.9", 1, 9);
	round_at(&a, &db, now);
	ASSERT_TRUE(!fake_find(&db, "xdp-rl:web:all:1s:198.51.100.9/32:1763916130", 0),
		    "two agents: 9 of 100 is below 0.1: not synced");
	slot_set(&a.f.t[0], 5, "198.51.100.9", 1, 10);
	round_at(&a, &db, now);
	ASSERT_TRUE(fake_find(&db, "xdp-rl:web:all:1s:198.51.100.9/32:1763916130", 0),
		    "two agents: 10 of 100 is: synced");
out:
	agent_free(&a);
	agent_free(&b);
}

UNIT_TEST(fleet_new_window)
{
	struct agent a;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2, gen;
	struct fake_key *k;

	agent_make(&a, 4, 16);
	slot_set(&a.f.t[0], 0, "198.51.100.7", 4, 50);
	round_at(&a, &db, now);
	/* The next window: generation 5, from START_NS + 1 s. */
	slot_set(&a.f.t[0], 0, "198.51.100.7", 5, 20);
	mt_windows(&a.f.t[0], mt_slot(&a.f.t[0], 0))->start_gen =
		((START_NS + SEC_NS) & ~XDP_RL_GEN_MASK) | 5;
	ASSERT_EQ(round_at(&a, &db, now + SEC_NS), 2L,
		  "new window: its whole count, with a TTL, on a key of its own");
	k = fake_find(&db, "xdp-rl:web:all:1s:198.51.100.7/32:1763916131", 0);
	ASSERT_TRUE(k && k->v == 20 && k->ttl == 11, "new window: window number + 1 holds 20");
	ASSERT_EQ(fake_find(&db, KEY, 0)->v, 50LL, "new window: the old key is left to expire");
	ASSERT_EQ(remote_of(&a, 0, &gen), 0ULL, "new window: nothing elsewhere yet");
	ASSERT_EQ(gen, 5ULL, "new window: the word names the new generation");
	ASSERT_EQ(a.f.nbook, (size_t)1, "new window: the old window's entry is gone");
	agent_free(&a);
}

UNIT_TEST(fleet_slot_retaken)
{
	struct agent a;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2;
	long n;

	agent_make(&a, 4, 16);
	slot_set(&a.f.t[0], 2, "198.51.100.7", 4, 50);
	fake_find(&db, KEY, 1)->v = 80; /* 30 elsewhere */
	n = fleet_plan(&a.f, now, &a.r);
	ASSERT_EQ(n, 2L, "slot retaken: INCRBY and EXPIRE planned");
	/* Before the replies: the slot passes to another key, its window to generation 5. */
	slot_set(&a.f.t[0], 2, "198.51.100.8", 5, 1);
	fake_run(&db, &a);
	ASSERT_EQ(a.f.remote[2], 0ULL,
		  "slot retaken: no word written for a window that is not there");
	ASSERT_EQ(a.f.book[0].pushed, 50ULL, "slot retaken: what was pushed is still booked");
	round_at(&a, &db, now);
	ASSERT_EQ(a.f.nbook, (size_t)0,
		  "slot retaken: then the entry goes (1 of 100 is not synced)");
	agent_free(&a);
}

/*
 * A window restarted within its window number (a reset, an eviction and a
 * slot of its own again, the limiter replaced) keeps this server's pushes
 * as its own: the others' part stays what the others pushed.
 */
UNIT_TEST(fleet_reset_keeps_own)
{
	struct agent a;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2;
	struct fake_key *k;
	long n;

	agent_make(&a, 4, 16);
	fake_find(&db, KEY, 1)->v = 30; /* another server's 30 */
	slot_set(&a.f.t[0], 3, "198.51.100.7", 9, 60);
	round_at(&a, &db, now);
	k = fake_find(&db, KEY, 0);
	ASSERT_TRUE(k && k->v == 90 && a.f.book[0].remote == 30, "reset: 60 pushed, 30 elsewhere");

	/* `reset`: generation 10, from 0; 5 of 100 is below --sync-above: not synced. */
	slot_set(&a.f.t[0], 3, "198.51.100.7", 10, 5);
	ASSERT_EQ(round_at(&a, &db, now), 0L, "reset: 5 of 100, not synced yet");
	ASSERT_EQ(a.f.nbook, (size_t)0, "reset: the old generation's entry left the book");
	ASSERT_EQ(a.f.ngone, (size_t)1, "reset: ... for gone, with what it pushed");
	slot_set(&a.f.t[0], 3, "198.51.100.7", 10, 20);
	ASSERT_EQ(round_at(&a, &db, now), 1L, "reset: 20: INCRBY alone (the key's TTL is set)");
	ASSERT_EQ(k->v, 110LL, "reset: the key holds 60 + 30 + 20");
	ASSERT_EQ(a.f.book[0].own, 80ULL, "reset: this server's own is 60 + 20");
	ASSERT_EQ(a.f.book[0].remote, 30ULL,
		  "reset: the others' part is still 30, not this server's 60 too");
	ASSERT_EQ(a.f.remote[3] & XDP_RL_REMOTE_MASK, 30ULL,
		  "reset: and so is the datapath's word");
	ASSERT_EQ(a.f.ngone, (size_t)0, "reset: gone's entry was taken over");

	/* Evicted, then in slot 1, a new generation again. */
	memset(mt_slot(&a.f.t[0], 3), 0, a.f.t[0].slot_size);
	slot_set(&a.f.t[0], 1, "198.51.100.7", 11, 30);
	ASSERT_EQ(round_at(&a, &db, now), 1L, "evicted: its 30 in slot 1: INCRBY");
	ASSERT_EQ(k->v, 140LL, "evicted: the key holds 140");
	ASSERT_EQ(a.f.book[0].remote, 30ULL, "evicted: the others' part is still 30");

	/* Trimmed out of the book (book_trim), then back: the same window, not pushed again. */
	free(a.f.gone);
	a.f.gone = malloc(sizeof(*a.f.gone));
	if (!ASSERT_TRUE(a.f.gone != NULL, "trimmed: memory"))
		goto out;
	a.f.gone[0] = a.f.book[0];
	a.f.ngone = a.f.capgone = 1;
	a.f.nbook = 0;
	ASSERT_EQ(round_at(&a, &db, now), 1L, "trimmed: back, nothing new: one GET");
	ASSERT_EQ(k->v, 140LL, "trimmed: its 30 are not pushed again");
	ASSERT_EQ(a.f.book[0].remote, 30ULL, "trimmed: the others' part is still 30");

	/*
	 * The limiter replaced: its window counted afresh (were the tables kept,
	 * pushed twice: only more refusals), its own part still its own.
	 */
	fleet_retire_book(&a.f);
	n = round_at(&a, &db, now);
	ASSERT_EQ(n, 1L, "replaced: its count pushed again: INCRBY (the key's TTL is set)");
	ASSERT_EQ(k->v, 170LL, "replaced: the key counts its 30 twice");
	ASSERT_EQ(a.f.book[0].remote, 30ULL, "replaced: the others' part is still 30");

	/* The next window number is another key: nothing is taken over. */
	slot_set(&a.f.t[0], 1, "198.51.100.7", 12, 40);
	mt_windows(&a.f.t[0], mt_slot(&a.f.t[0], 1))->start_gen =
		((START_NS + SEC_NS) & ~XDP_RL_GEN_MASK) | 12;
	round_at(&a, &db, now + SEC_NS);
	k = fake_find(&db, "xdp-rl:web:all:1s:198.51.100.7/32:1763916131", 0);
	ASSERT_TRUE(k && k->v == 40 && a.f.book[0].own == 40 && a.f.book[0].remote == 0,
		    "next window: its own key, only its own 40");
out:
	agent_free(&a);
}

UNIT_TEST(fleet_lost_key)
{
	struct agent a;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2;
	struct fake_key *k;

	agent_make(&a, 4, 16);
	slot_set(&a.f.t[0], 1, "198.51.100.7", 4, 40);
	round_at(&a, &db, now);
	/* Redis restarts without its data. */
	db.n = 0;
	ASSERT_EQ(round_at(&a, &db, now), 1L, "lost key: a GET finds nothing");
	ASSERT_EQ(a.f.book[0].pushed, 0ULL, "lost key: what Redis lost is to be pushed again");
	ASSERT_EQ(round_at(&a, &db, now), 2L, "lost key: INCRBY of the whole count, and EXPIRE");
	k = fake_find(&db, KEY, 0);
	ASSERT_TRUE(k && k->v == 40 && k->ttl == 11, "lost key: the key holds the count again");
	agent_free(&a);
}

UNIT_TEST(fleet_errors)
{
	struct agent a;
	struct fake db = { .fail_incr = 1 };
	__u64 now = START_NS + SEC_NS / 2;

	agent_make(&a, 4, 16);
	slot_set(&a.f.t[0], 1, "198.51.100.7", 4, 40);
	round_at(&a, &db, now);
	ASSERT_EQ(a.f.reply_errors, 1ULL, "errors: a refused INCRBY is counted");
	ASSERT_STREQ(a.f.reply_why, "ERR refused", "errors: and what Redis said is kept");
	ASSERT_EQ(a.f.book[0].pushed, 0ULL, "errors: nothing is taken as pushed");
	/* The replies never come (a connection lost): the next round sends the same. */
	db.fail_incr = 0;
	fleet_plan(&a.f, now, &a.r);
	fleet_abort(&a.f);
	a.r.out.len = 0;
	a.r.queued = 0;
	ASSERT_EQ(round_at(&a, &db, now), 2L, "errors: unanswered, the count goes again");
	ASSERT_EQ(fake_find(&db, KEY, 0)->v, 40LL, "errors: and is counted once it is answered");
	agent_free(&a);
}

UNIT_TEST(fleet_spoofed_flood)
{
	struct agent a;
	__u64 now = START_NS + SEC_NS / 2, i;
	char addr[32];
	long n;

	/* 2 000 sources each at half their limit: a flood of spoofed sources, say. */
	agent_make(&a, 512, 16);
	for (i = 0; i < 2000; i++) {
		snprintf(addr, sizeof(addr), "198.18.%llu.%llu", (unsigned long long)(i / 250),
			 (unsigned long long)(i % 250 + 1));
		slot_set(&a.f.t[0], i, addr, 1, 50 + (i == 1234) * 40);
	}
	n = fleet_plan(&a.f, now, &a.r);
	ASSERT_EQ(n, 32L, "spoofed flood: --max-synced 16: 16 INCRBY and 16 EXPIRE, not 2 000");
	ASSERT_EQ(a.f.left_out, 1984ULL, "spoofed flood: the rest are counted as left out");
	ASSERT_TRUE(memmem(a.r.out.p, a.r.out.len, "198.18.4.235/32", 15) != NULL,
		    "spoofed flood: the heaviest source (90 of 100) is among those synced");
	a.r.out.len = 0;
	a.r.queued = 0;
	fleet_abort(&a.f);
	agent_free(&a);
}

/* A --shared rule's budget, read through the callback as from the `shared` map. */
static struct xdp_rl_layers shared_windows;

static int read_shared(void *ctx, __u32 rule_id, struct xdp_rl_layers *w)
{
	(void)ctx;
	if (rule_id != 7)
		return -1;
	*w = shared_windows;
	return 0;
}

UNIT_TEST(fleet_shared_and_v6)
{
	struct agent a;
	struct fake db = {};
	__u64 now = START_NS + SEC_NS / 2, gen, k;
	struct xdp_rl_slot *s;
	struct xdp_rl_state *w;
	struct fleet_set *sets;
	__u32 a6[4];

	agent_make(&a, 4, 16);
	/* An IPv6 table, keyed per /64, and a --shared rule (id 7) of 100 per 1 s. */
	table_make(&a.f.t[XDP_RL_T_SRC6], 4);
	a.f.t[XDP_RL_T_SRC6].wide = 1;
	a.f.t[XDP_RL_T_SRC6].slot_size = xdp_rl_slot_size(1, 1);
	a.f.t[XDP_RL_T_SRC6].bucket_size = XDP_RL_BUCKET_SLOTS * a.f.t[XDP_RL_T_SRC6].slot_size;
	free(a.f.t[XDP_RL_T_SRC6].mem);
	a.f.t[XDP_RL_T_SRC6].mem = calloc(4, a.f.t[XDP_RL_T_SRC6].bucket_size);
	a.f.base[XDP_RL_T_SRC6] = 16;
	a.f.base[XDP_RL_T_SHARED] = 32;
	free(a.f.remote);
	a.f.nwords = 32 + 8 * XDP_RL_MAX_LAYERS;
	a.f.remote = calloc(a.f.nwords, sizeof(__u64));
	sets = realloc(a.f.sets, 2 * sizeof(*sets));
	if (!ASSERT_TRUE(sets, "shared: room for a second set"))
		goto out;
	a.f.sets = sets;
	a.f.sets[1] = a.set;
	a.f.sets[1].ls.shared = 1;
	a.f.sets[1].ls.rule_id = 7;
	a.f.sets[1].ls.lsid = 9;
	snprintf(a.f.sets[1].scope, sizeof(a.f.sets[1].scope), "shared");
	snprintf(a.f.sets[1].who, sizeof(a.f.sets[1].who), "198.19.0.0/16");
	a.f.nsets = 2;
	a.f.read_shared = read_shared;
	shared_windows.layer[0].start_gen = (START_NS & ~XDP_RL_GEN_MASK) | 3;
	shared_windows.layer[0].count_gen = (3ULL << XDP_RL_COUNT_BITS) | 40;

	s = mt_slot(&a.f.t[XDP_RL_T_SRC6], 5);
	inet_pton(AF_INET6, "2001:db8:1:2::", a6);
	memcpy(s + 1, a6, 16);
	s->tag = 0xabcd000000000000ULL | ((__u64)LSID << 2) | XDP_RL_TAG_LIVE;
	w = mt_windows(&a.f.t[XDP_RL_T_SRC6], s);
	w->start_gen = (START_NS & ~XDP_RL_GEN_MASK) | 6;
	w->count_gen = (6ULL << XDP_RL_COUNT_BITS) | 30;
	fake_find(&db, "xdp-rl:web:all:1s:2001:db8:1:2::/64:1763916130", 1)->v = 5;
	fake_find(&db, "xdp-rl:web:shared:1s:198.19.0.0/16:1763916130", 1)->v = 25;

	ASSERT_EQ(round_at(&a, &db, now), 4L, "shared and v6: two windows, INCRBY and EXPIRE each");
	ASSERT_EQ(fake_find(&db, "xdp-rl:web:all:1s:2001:db8:1:2::/64:1763916130", 0)->v, 35LL,
		  "shared and v6: an IPv6 key, as inet_ntop writes it");
	ASSERT_EQ(fake_find(&db, "xdp-rl:web:shared:1s:198.19.0.0/16:1763916130", 0)->v, 65LL,
		  "shared and v6: a --shared budget's key, by the rule's prefix");
	ASSERT_EQ(remote_of(&a, 16 + 5, &gen), 5ULL, "shared and v6: the IPv6 slot's word: 5");
	ASSERT_EQ(gen, 6ULL, "shared and v6: with its window's generation");
	k = 32 + 7 * XDP_RL_MAX_LAYERS; /* the shared budgets' words: a rule's 4 layers each */
	ASSERT_EQ(remote_of(&a, k, &gen), 25ULL, "shared and v6: the rule's word: 25");
	ASSERT_EQ(gen, 3ULL, "shared and v6: with the budget's generation");
	ASSERT_TRUE(a.f.nbook == 2 && a.f.book[0].id < a.f.book[1].id,
		    "shared and v6: the book holds both, in scan order");
out:
	free(a.f.t[XDP_RL_T_SRC6].mem);
	a.f.t[XDP_RL_T_SRC6].mem = NULL;
	agent_free(&a);
}

/* ---- an LRU table: elements in the kernel's order, places that two keys may share ---- */

/* The elements the test's LRU table holds, walked in the order given. */
static struct mt_entry lru_elems[4];
static size_t lru_nelems;

static int lru_walk(const struct mtable *t, mt_fn fn, void *ctx)
{
	size_t i;

	(void)t;
	for (i = 0; i < lru_nelems; i++)
		if (fn(&lru_elems[i], ctx))
			return 1;
	return 0;
}

/* The words the agent had the program write into elements (write_lru). */
struct lru_writes {
	struct {
		__u32 t, k[4], lsid, layer;
		__u64 word;
	} w[16];
	size_t n;
};

static int lru_write(void *ctx, __u32 t, const __u32 k[4], __u32 lsid, __u32 layer, __u64 word)
{
	struct lru_writes *lw = ctx;

	if (lw->n < 16) {
		lw->w[lw->n].t = t;
		memcpy(lw->w[lw->n].k, k, 16);
		lw->w[lw->n].lsid = lsid;
		lw->w[lw->n].layer = layer;
		lw->w[lw->n].word = word;
	}
	lw->n++;
	return 0;
}

/* The last word written for key @k: its count, or -1 if none was. */
static long long lru_written(const struct lru_writes *lw, const __u32 k[4])
{
	size_t i = lw->n < 16 ? lw->n : 16;

	while (i--)
		if (!memcmp(lw->w[i].k, k, 16))
			return lw->w[i].word & XDP_RL_REMOTE_MASK;
	return -1;
}

struct place_of {
	__u64 place;
	__u32 i;
};

static int by_place(const void *a, const void *b)
{
	const struct place_of *x = a, *y = b;

	return x->place < y->place ? -1 : x->place > y->place;
}

/* Key @i of the search below: 2001:2::i (a /128: --v6-prefix 128). */
static void lru_key6(__u32 i, __u32 k[4])
{
	k[0] = htonl(0x20010002);
	k[1] = 0;
	k[2] = htonl(i >> 16);
	k[3] = htonl(i & 0xffff);
}

/* Two keys of 2001:2::/48 at one place (36 bits of a hash: among 2^20 keys, about 8 pairs). */
static int lru_same_place(__u32 a[4], __u32 b[4])
{
	const __u32 n = 1U << 20;
	struct place_of *v = malloc(n * sizeof(*v));
	__u32 i, k[4];
	int found = 0;

	if (!v)
		return 0;
	for (i = 0; i < n; i++) {
		lru_key6(i, k);
		v[i].place = fleet_lru_place(k, LSID);
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), by_place);
	for (i = 1; i < n && !found; i++) {
		if (v[i].place != v[i - 1].place)
			continue;
		lru_key6(v[i - 1].i, a);
		lru_key6(v[i].i, b);
		found = 1;
	}
	free(v);
	return found;
}

/* Element @e holds key @k (IPv6), its one window generation @gen counting @count. */
static void lru_elem(struct mt_entry *e, const __u32 k[4], __u64 gen, __u64 count)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->k, k, 16);
	e->lsid = LSID;
	e->w[0].start_gen = (START_NS & ~XDP_RL_GEN_MASK) | gen;
	e->w[0].count_gen = (gen << XDP_RL_COUNT_BITS) | count;
	e->has_words = 1;
}

UNIT_TEST(fleet_lru_shared_place)
{
	struct agent a;
	struct fake db = {};
	struct lru_writes lw = {};
	__u64 now = START_NS + SEC_NS / 2;
	__u32 k1[4], k2[4];
	struct fake_key *r1, *r2;
	char n1[128], n2[128], who[64];

	if (!ASSERT_TRUE(lru_same_place(k1, k2), "lru: two keys of 2001:2::/48 share a place"))
		return;
	agent_make(&a, 4, 16);
	memset(&a.f.t[XDP_RL_T_SRC6], 0, sizeof(a.f.t[0]));
	a.f.t[XDP_RL_T_SRC6].lru = 1;
	a.f.t[XDP_RL_T_SRC6].wide = 1;
	a.f.t[XDP_RL_T_SRC6].layers = 1;
	a.f.v6_prefix = 128;
	a.f.foreach_lru = lru_walk;
	a.f.write_lru = lru_write;
	a.f.shared_ctx = &lw;
	fleet_who(&a.f, XDP_RL_T_SRC6, k1, who, sizeof(who));
	snprintf(n1, sizeof(n1), "xdp-rl:web:all:1s:%s:%llu", who, NUMBER);
	fleet_who(&a.f, XDP_RL_T_SRC6, k2, who, sizeof(who));
	snprintf(n2, sizeof(n2), "xdp-rl:web:all:1s:%s:%llu", who, NUMBER);

	/* The first alone, then the second beside it (a new entry where one is). */
	lru_nelems = 1;
	lru_elem(&lru_elems[0], k1, 7, 50);
	ASSERT_EQ(round_at(&a, &db, now), 2L, "lru: one key: INCRBY and EXPIRE");
	lru_nelems = 2;
	lru_elem(&lru_elems[0], k1, 7, 55);
	lru_elem(&lru_elems[1], k2, 8, 40);
	ASSERT_EQ(round_at(&a, &db, now), 3L,
		  "lru: a second key at its place: its INCRBY and EXPIRE, and the first's 5 more");
	r1 = fake_find(&db, n1, 0);
	r2 = fake_find(&db, n2, 0);
	if (!ASSERT_TRUE(r1 && r2, "lru: each its own key in Redis (%s, %s)", n1, n2))
		goto out;
	ASSERT_TRUE(r1->v == 55 && r2->v == 40, "lru: 55 and 40 pushed (%lld, %lld)", r1->v, r2->v);
	ASSERT_EQ(a.f.nbook, (size_t)2, "lru: one entry each, at the same place");
	ASSERT_EQ(
		lw.n, (size_t)2,
		"lru: a word written for each key by the program, not again while it is the same");
	ASSERT_TRUE(lw.w[0].t == XDP_RL_T_SRC6 && lw.w[0].lsid == LSID && lw.w[0].layer == 0,
		    "lru: into table src6, the key's limit set, layer 0");

	/* 30 elsewhere for the first; the kernel now walks them the other way round. */
	r1->v += 30;
	lru_elem(&lru_elems[0], k2, 8, 40);
	lru_elem(&lru_elems[1], k1, 7, 60);
	ASSERT_EQ(round_at(&a, &db, now), 2L,
		  "lru: each found in the book by key: the new 5 pushed, a GET for the other");
	ASSERT_TRUE(r1->v == 90 && r2->v == 40,
		    "lru: nothing pushed twice (%lld of 90, %lld of 40)", r1->v, r2->v);
	ASSERT_EQ(lru_written(&lw, k1), 30LL, "lru: the first learns the 30 elsewhere");
	ASSERT_EQ(lru_written(&lw, k2), 0LL, "lru: the second, nothing elsewhere");
	ASSERT_EQ(a.f.nbook, (size_t)2, "lru: still one entry each");
	ASSERT_EQ(lw.n, (size_t)3, "lru: only the word that changed was written");

	/* The first's element is taken (evicted): its entry goes, the other's stays. */
	lru_nelems = 1;
	lru_elem(&lru_elems[0], k2, 8, 41);
	ASSERT_EQ(round_at(&a, &db, now), 1L, "lru: the one left: its 1 more pushed");
	ASSERT_EQ(r2->v, 41LL, "lru: only the 1 new");
	ASSERT_EQ(a.f.nbook, (size_t)1, "lru: the evicted key's entry is gone");
out:
	agent_free(&a);
}

/* ---- fleet_who: each --key's keys ------------------------------------------------- */

/* The text of key @addr (a table's key, masked) with @port in table @t, under --key @key. */
static const char *who_of(struct fleet *f, __u32 key, __u32 t, const char *addr, int port)
{
	static char buf[128];
	__u32 k[4] = {};
	int v6 = strchr(addr, ':') != NULL;

	f->key = key;
	inet_pton(v6 ? AF_INET6 : AF_INET, addr, k);
	if (port >= 0) {
		if (v6)
			k[3] |= htonl(port);
		else
			k[1] = htonl(port);
	}
	fleet_who(f, t, k, buf, sizeof(buf));
	return buf;
}

UNIT_TEST(fleet_who_keys)
{
	struct fleet f;

	fleet_init(&f, "web", 0, 1);
	f.v4_prefix = 24;
	f.v6_prefix = 64;
	f.link_local = XDP_RL_LL_ADDRESS;
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC4, "198.51.100.0", 443),
		     "198.51.100.0/24,dport=443",
		     "fleet_who: src,dport: an IPv4 key's port in k[1]");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC4, "198.51.100.0", 0),
		     "198.51.100.0/24,dport=0",
		     "fleet_who: src,dport: port 0 (none could be read)");
	ASSERT_STREQ(
		who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC6, "2001:db8:1:2::", 53),
		"2001:db8:1:2::/64,dport=53",
		"fleet_who: src,dport: an IPv6 key's port in its last 16 bits, not the address");
	f.v6_prefix = 112;
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC6, "2001:db8::7:0", 65535),
		     "2001:db8::7:0/112,dport=65535",
		     "fleet_who: src,dport: --v6-prefix 112 and the highest port");
	f.v6_prefix = 64;
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST, XDP_RL_T_SRC4, "198.51.100.0", -1),
		     "dst=198.51.100.0/24", "fleet_who: dst: IPv4");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST, XDP_RL_T_SRC6, "2001:db8:1:2::", -1),
		     "dst=2001:db8:1:2::/64", "fleet_who: dst: IPv6");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST_DPORT, XDP_RL_T_SRC4, "198.51.100.0", 80),
		     "dst=198.51.100.0/24,dport=80", "fleet_who: dst,dport: IPv4");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST_DPORT, XDP_RL_T_SRC6, "2001:db8:1:2::", 8080),
		     "dst=2001:db8:1:2::/64,dport=8080", "fleet_who: dst,dport: IPv6");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_AGG4, "198.51.100.0", 443),
		     "agg=198.51.100.0/24,dport=443", "fleet_who: src,dport: an IPv4 aggregate");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST, XDP_RL_T_AGG4, "198.51.100.0", -1),
		     "dst-agg=198.51.100.0/24", "fleet_who: dst: an IPv4 aggregate");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST, XDP_RL_T_AGG6, "2001:db8:1::", -1),
		     "dst-agg=2001:db8:1::/48", "fleet_who: dst: an IPv6 aggregate");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST_DPORT, XDP_RL_T_AGG4, "198.51.100.0", 25),
		     "dst-agg=198.51.100.0/24,dport=25", "fleet_who: dst,dport: an IPv4 aggregate");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST_DPORT, XDP_RL_T_AGG6, "2001:db8:1::", 443),
		     "dst-agg=2001:db8:1::/48,dport=443",
		     "fleet_who: dst,dport: an IPv6 aggregate");
	/* Link-local keyed whole: IPv6 has no room for a port, IPv4 keeps it. */
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC6, "fe80::1234:5678", -1),
		     "fe80::1234:5678/128",
		     "fleet_who: src,dport: fe80:: keyed whole: all of it, no port");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_DST_DPORT, XDP_RL_T_SRC6, "fe80::50", -1),
		     "dst=fe80::50/128",
		     "fleet_who: dst,dport: fe80::50 keyed whole: its last 16 bits are no port");
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC4, "169.254.3.4", 22),
		     "169.254.3.4/32,dport=22", "fleet_who: src,dport: 169.254/16 keeps its port");
	f.link_local = XDP_RL_LL_PREFIX;
	ASSERT_STREQ(who_of(&f, XDP_RL_KEY_SRC_DPORT, XDP_RL_T_SRC6, "fe80::", 53),
		     "fe80::/64,dport=53",
		     "fleet_who: src,dport: --link-local prefix: fe80::/64 and its port");
	fleet_free(&f);
}
