/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * buckets.h - the bucket table (load --table buckets, the default): fixed
 * arrays of buckets shared by every CPU, where finding a source costs one
 * bucket. table.h is the interface the datapath uses; lru.h the other
 * table behind it.
 *
 * Layout (include/xdp_rl.h): a table is an array map of buckets of
 * XDP_RL_BUCKET_SLOTS slots. A key may live in either of two buckets chosen
 * by its keyed hash. It is looked for in the first, then in the second, and
 * inserted into the first while that is mostly empty, else into the one
 * with more room (FIRST_KEEPS): in a table holding a third of
 * --max-sources, nineteen keys in twenty are found in their first bucket
 * (fewer as it fills), so a lookup mostly reads one bucket of an mmapable
 * (page-aligned) array: IPv4 with one window per slot, 128 bytes, two
 * adjacent 64-byte lines; IPv6, 192; each window more, 64.
 * The kernel's LRU hash reads a bucket head, then an element elsewhere, and
 * hashes and compares through calls.
 *
 * Exactness while slots change hands. The steady state takes no lock: a
 * packet finds the slot whose tag is its key's, charges its windows
 * (window.h), and reads the tag again. Inserts take a lock, one of
 * XDP_RL_LOCKS chosen by the key's hash, so two CPUs never insert one key
 * twice. Under it a slot passes to a new key in three steps:
 *
 *   1. its tag goes from what it was to the new key's with BUSY set, by a
 *      compare-and-swap (inserts of other keys, under other locks, may race
 *      for the same slot; one wins). From then on no packet matches the slot:
 *      not the old key's, and not yet the new key's;
 *   2. each of its windows is closed (window_close: its generation moves
 *      on, empty), so the new key's first packet opens a window of its own;
 *   3. the tag is set to the new key's.
 *
 * A packet of the old key that matched the slot before step 1 and charged a
 * window after step 2, and so the new key's window, sees the tag changed
 * when it reads it again: the charge is an atomic instruction, a full
 * barrier, made after step 1. It takes its charges back (window_undo lands
 * only in the window charged) and looks again, as a new source. Until then
 * the new key's count holds one charge too many: under that race a packet
 * of the new key may be refused that could have passed, never passed one
 * that should not. A charge made before step 2 is in a window step 2
 * closed, and counts for nothing.
 *
 * Which slot goes: an empty one (in the key's first bucket while that has
 * FIRST_KEEPS empty, else in the emptier of its two), else one whose
 * windows are all over (nothing is lost), else the one whose source was
 * seen longest ago among the key's two buckets. Only the last is
 * an eviction: a source's open window is forgotten, as the least recently
 * used entry of an LRU map is. A key's windows are judged over with the
 * global limits' lengths if it is charged under them, else (a rule's limit
 * set) with the longest window any limit has (struct xdp_rl_live's
 * max_window_ns): never taken for over while open. While a ban may hold
 * (--ban, ban.h), a window counts as open for the longest ban more, so that
 * the slot of a banned key is not the first to go once its window is over.
 *
 * User space never writes a slot; it asks the program to (admin.h), which
 * claims the slot by the same BUSY step under the key's insert lock.
 */
#ifndef XDP_RL_BUCKETS_H
#define XDP_RL_BUCKETS_H

/* Included by table.h, after its struct table_key and struct table_pos. */
#include "maps.h"
#include "window.h"
#include "pos.h"

#define SEEN_FOUND 0xffffULL /* seen's low bits once a packet found the slot */

/*
 * A new key goes to its first bucket while that has at least this many of
 * its slots empty, else to the one with more room (the first on a tie).
 * A lookup reads the first bucket first, and only then the second: each
 * key found in its second pays a second cache miss after the first, much
 * of what xdp-rl's table cost beyond one line per source with many sources
 * (doc/costs.md, part 1). With keys kept in their first bucket while it
 * has three of its four slots empty, a table holding a third of
 * --max-sources has one key in twenty in its second bucket, where always
 * choosing the emptier bucket had one in five; the share grows as the
 * table fills, to about what the emptier bucket gave once it is full.
 * Filled to --max-sources (half its slots), about three keys in a hundred
 * thousand find both buckets full and take a slot whose windows are over,
 * or the one seen longest ago, where the emptier bucket every time had
 * about one, and the first bucket every time three in a thousand (random
 * keys, simulated).
 */
#define FIRST_KEEPS 3

/* Where @key, charged under limit set @lsid, lives in a table of @nbuckets buckets. */
static __always_inline void buckets_pos(struct table_pos *pos, const struct table_key *key,
					const int v6, __u32 lsid, __u32 nbuckets, __u64 seed)
{
	__u64 h = xdp_rl_hash(key->k, v6, lsid, seed);

	pos->tag = xdp_rl_tag(key->k, v6, lsid, h);
	xdp_rl_bucket_pair(h, nbuckets, &pos->b1, &pos->b2);
	pos->lock = xdp_rl_lock_of(h);
}

static __always_inline struct xdp_rl_state *slot_states(struct xdp_rl_slot *s, const int v6)
{
	return (void *)s + xdp_rl_slot_head(v6);
}

/* Whether @s (an IPv6 slot) holds @key; its tag matched. */
static __always_inline int slot_key_is(const struct xdp_rl_slot *s, const struct table_key *key)
{
	const struct xdp_rl_key6 *k = (const void *)(s + 1);

	return k->addr[0] == key->k[0] && k->addr[1] == key->k[1] && k->addr[2] == key->k[2] &&
	       k->addr[3] == key->k[3];
}

/*
 * The slot of @key in bucket @b of @map (one window per slot), its index in
 * *index, or NULL: an
 * early exit per slot, for the fast path, whose paths do not go on to the
 * general path's charge (there, bucket_match keeps to one path).
 */
static __always_inline struct xdp_rl_slot *
bucket_find(void *map, __u32 b, const int v6, const struct table_key *key, __u64 tag, __u32 *index)
{
	struct xdp_rl_slot *s;
	void *bk;
	__u32 j;

	bk = bpf_map_lookup_elem(map, &b);
	if (!bk)
		return NULL;
	for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
		s = bk + j * xdp_rl_slot_size(v6, 1);
		if (READ_ONCE(s->tag) == tag && (!v6 || slot_key_is(s, key))) {
			*index = b * XDP_RL_BUCKET_SLOTS + j;
			return s;
		}
	}
	return NULL;
}

/*
 * Masks without branches. BPF has no set-on-condition instruction, so a
 * compare costs a branch, and every branch that picks among slots doubles
 * the paths the verifier walks after it; these keep a bucket scan one path.
 * barrier_var hides what the arithmetic means, or LLVM would turn it back
 * into compares and branches.
 */

/* All ones if @x is not 0, else 0. */
static __always_inline __u64 mask_nonzero(__u64 x)
{
	__u64 neg = -x, m;

	barrier_var(neg);
	m = -((x | neg) >> 63);
	barrier_var(m);
	return m;
}

/* All ones if @a < @b, else 0; both below 2^63. */
static __always_inline __u64 mask_below(__u64 a, __u64 b)
{
	__u64 d = a - b, m;

	barrier_var(d);
	m = -(d >> 63);
	barrier_var(m);
	return m;
}

/*
 * Slot @j (below XDP_RL_BUCKET_SLOTS, not a constant) of bucket @bk, whose
 * slots are @size bytes: the offset j * size made of masks and adds. The
 * verifier of Linux 6.1 follows the bounds of a register through a
 * multiplication only when the other operand is a constant in the
 * instruction; `size` is a constant only to the verifier (cfg_layers), so
 * clang may emit `size *= j`, whose result 6.1 takes for unbounded, and a
 * map pointer plus an unbounded number is refused. AND and ADD with a
 * register source are bounded on every kernel, whatever the operands' order.
 */
static __always_inline struct xdp_rl_slot *bucket_slot(void *bk, __u32 j, __u32 size)
{
	__u32 b0 = -(j & 1), b1 = -((j >> 1) & 1);

	_Static_assert(XDP_RL_BUCKET_SLOTS == 4, "bucket_slot() takes two bits of the slot");
	barrier_var(b0);
	barrier_var(b1);
	return bk + ((size & b0) + ((size << 1) & b1));
}

/*
 * Match @key against the slots of bucket @bk: returns all ones if one holds
 * it, with its index in *at. A key is in at most one slot of its two
 * buckets (inserts look under the lock), so matches can be summed.
 */
static __always_inline __u64 bucket_match(void *bk, const int v6, const struct table_key *key,
					  __u64 tag, __u32 *at)
{
	const __u32 size = xdp_rl_slot_size(v6, cfg_layers);
	const struct xdp_rl_key6 *k6;
	struct xdp_rl_slot *s;
	__u64 m, any = 0;
	__u32 j;

	*at = 0;
#pragma unroll
	for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
		s = bk + j * size;
		m = READ_ONCE(s->tag) ^ tag;
		if (v6) {
			k6 = (const void *)(s + 1);
			m |= (k6->addr[0] ^ key->k[0]) | (k6->addr[1] ^ key->k[1]) |
			     (k6->addr[2] ^ key->k[2]) | (k6->addr[3] ^ key->k[3]);
		}
		m = ~mask_nonzero(m);
		*at |= j & m;
		any |= m;
	}
	*at &= XDP_RL_BUCKET_SLOTS - 1;
	return any;
}

/*
 * buckets_find - where @key is in @map (a constant at each call site, so that
 * the verifier inlines the array lookups): bucket * XDP_RL_BUCKET_SLOTS +
 * slot, or -1. A number, not a pointer: the paths that find a slot (in
 * either bucket, or by inserting) join with one state, and buckets_slot()
 * turns it into a pointer once.
 */
static __always_inline long buckets_find(void *map, const int v6, const struct table_key *key,
					 const struct table_pos *pos)
{
	void *bk;
	__u32 at;

	bk = bpf_map_lookup_elem(map, &pos->b1);
	if (bk && bucket_match(bk, v6, key, pos->tag, &at))
		return (long)pos->b1 * XDP_RL_BUCKET_SLOTS + at;
	bk = bpf_map_lookup_elem(map, &pos->b2);
	if (bk && bucket_match(bk, v6, key, pos->tag, &at))
		return (long)pos->b2 * XDP_RL_BUCKET_SLOTS + at;
	return -1;
}

/* The slot at @at (from buckets_find or table_insert) in @map, or NULL. */
static __always_inline struct xdp_rl_slot *buckets_slot(void *map, const int v6, long at)
{
	__u32 b = at_index(at) / XDP_RL_BUCKET_SLOTS;
	void *bk = bpf_map_lookup_elem(map, &b);

	if (!bk)
		return NULL;
	return bucket_slot(bk, at_index(at) % XDP_RL_BUCKET_SLOTS,
			   xdp_rl_slot_size(v6, cfg_layers));
}

/*
 * Victim ranks (lower goes first), branch-free: an empty slot of the bucket
 * that goes first (FIRST_KEEPS) 0, an empty slot of the other 1, a slot
 * whose windows are all over 2, else 3 plus how recently its source was
 * seen; never a BUSY slot. Turning to the emptier bucket once the first is
 * half full keeps buckets from overflowing while the table has room (the
 * figures are FIRST_KEEPS's).
 */
#define RANK_STALE   2
#define RANK_AGE_MAX ((1ULL << 50) - 1)
#define RANK_NEVER   (1ULL << 62)

static __always_inline __u64 slot_rank(struct xdp_rl_slot *s, __u64 tag, const int v6,
				       const struct table_pos *pos, const struct xdp_rl_live *live,
				       __u64 other_bucket)
{
	struct xdp_rl_state *st = slot_states(s, v6);
	__u64 open = 0, age, rank, now, seen, start, w, m;
	int i;

	/* All ones if the key is charged under the global limits. */
	m = ~mask_nonzero(xdp_rl_tag_lsid(tag) ^ live->lsid);
#pragma unroll
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= cfg_layers)
			break;
		/* Open, as xdp_rl_window_over says: started, not lasted, not on another clock. */
		w = (live->layer[i].window_ns & m) | (live->max_window_ns & ~m);
		/*
		 * A rate's state is open while its TAT is ahead (rate.h), however
		 * long ago its episode began: its offset counts as a window's
		 * length. A window's count read so only keeps its slot longer.
		 */
		w |= READ_ONCE(st[i].count_gen) & XDP_RL_RATE_OFF_MASK;
		/* A ban may outlast its window, or a rate's TAT, by the longest ban (ban.h). */
		w += live->max_ban_ns & mask_nonzero(live->flags & XDP_RL_F_BANS);
		start = xdp_rl_start_ns(READ_ONCE(st[i].start_gen));
		open |= mask_nonzero(start) & mask_below(pos->now, start + w) &
			~mask_below(pos->now + XDP_RL_AHEAD_MAX_NS, start);
	}
	/*
	 * Seen longest ago first; a stamp from a later tick (another CPU's) is
	 * age 0, and ages stop at 2^34 ticks (199 days at HZ=1000) so that the
	 * rank stays above a stale slot's.
	 */
	now = (pos->tick << 16) | SEEN_FOUND;
	seen = READ_ONCE(s->seen);
	age = (now - seen) & ~mask_below(now, seen);
	m = mask_below(RANK_AGE_MAX, age);
	age = (age & ~m) | (RANK_AGE_MAX & m);
	rank = RANK_STALE + (open & (1 + RANK_AGE_MAX - age));
	rank = (mask_nonzero(tag & XDP_RL_TAG_BUSY) & RANK_NEVER) |
	       (~mask_nonzero(tag & XDP_RL_TAG_BUSY) & rank);
	return (rank & mask_nonzero(tag)) | (other_bucket & 1 & ~mask_nonzero(tag));
}

/* The empty slots of bucket @bk. */
static __always_inline __u64 bucket_free(void *bk, const int v6)
{
	const __u32 size = xdp_rl_slot_size(v6, cfg_layers);
	struct xdp_rl_slot *s;
	__u64 n = 0;
	__u32 j;

#pragma unroll
	for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
		s = bk + j * size;
		n += 1 + mask_nonzero(READ_ONCE(s->tag)); /* 1 if empty, else 0 */
	}
	return n;
}

/* Insert attempts (a victim taken by a racing insert of another key) before giving up. */
#define TABLE_CLAIM_TRIES 2

/*
 * Give @key a slot in the buckets @bk1 and @bk2 of a table (the protocol
 * above), unless it has one. Returns where, as bucket number (0 or 1) times
 * XDP_RL_BUCKET_SLOTS plus the slot, with INSERT_NEW and INSERT_EVICTED; or
 * -1 if no slot could be had, which only a storm of racing inserts into the
 * same buckets can cause. @order ranks inserts within a tick.
 */
static __always_inline long pair_insert(void *bk1, void *bk2, struct xdp_rl_lock *lk, const int v6,
					const struct table_key *key, const struct table_pos *pos,
					const struct xdp_rl_live *live, __u64 order)
{
	const __u32 size = xdp_rl_slot_size(v6, cfg_layers);
	__u64 t, vtag, rank, best, busy, m, second, free1;
	struct xdp_rl_state *vst;
	struct xdp_rl_key6 *k6;
	struct xdp_rl_slot *s;
	__u32 b, j, vj, at;
	void *bk;
	long where = -1;
	int i, try;

	busy = (pos->tag & ~XDP_RL_TAG_FLAGS) | XDP_RL_TAG_BUSY;
	bpf_spin_lock(&lk->lock);
	for (try = 0; try < TABLE_CLAIM_TRIES; try++) {
		/* Under the lock no other CPU inserts this key: look once more. */
		if (bucket_match(bk1, v6, key, pos->tag, &at)) {
			where = at;
			break;
		}
		if (bucket_match(bk2, v6, key, pos->tag, &at)) {
			where = XDP_RL_BUCKET_SLOTS + at;
			break;
		}
		best = RANK_NEVER;
		vj = 0;
		vtag = 0;
		/*
		 * All ones if the second bucket's empty slots go first: the first
		 * has fewer than FIRST_KEEPS empty slots, and the second has more
		 * empty slots than the first.
		 */
		free1 = bucket_free(bk1, v6);
		second = mask_below(free1, FIRST_KEEPS) & mask_below(free1, bucket_free(bk2, v6));
		for (b = 0; b < 2; b++) {
			bk = b ? bk2 : bk1;
#pragma unroll
			for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
				s = bk + j * size;
				t = READ_ONCE(s->tag);
				/* The empty slots of the bucket that does not go first rank after. */
				rank = slot_rank(s, t, v6, pos, live, second ^ -(__u64)b);
				m = mask_below(rank, best);
				best += (rank - best) & m;
				vj = (vj & ~m) | ((b * XDP_RL_BUCKET_SLOTS + j) & m);
				vtag = (vtag & ~m) | (t & m);
			}
		}
		if (best == RANK_NEVER)
			break; /* all eight are being taken by other inserts */
		vj &= 2 * XDP_RL_BUCKET_SLOTS - 1;
		s = bucket_slot(vj < XDP_RL_BUCKET_SLOTS ? bk1 : bk2, vj % XDP_RL_BUCKET_SLOTS,
				size);
		/* 1: claim it; a racing insert of another key may have been first. */
		if (__sync_val_compare_and_swap(&s->tag, vtag, busy) != vtag)
			continue;
		/* 2: close its windows, and give it the key. */
		vst = slot_states(s, v6);
		for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
			if ((__u32)i >= cfg_layers)
				break;
			/*
			 * A bucket table's. The slot is BUSY: only packets that
			 * matched it before can still charge it, one per CPU at
			 * most, so the swaps run out only under a storm; the new
			 * key then starts with the old one's count, which can
			 * only refuse it packets, never admit one.
			 */
			window_close_in(&vst[i], 0, 0, WINDOW_TRIES);
		}
		if (v6) {
			k6 = (void *)(s + 1);
			k6->addr[0] = key->k[0];
			k6->addr[1] = key->k[1];
			k6->addr[2] = key->k[2];
			k6->addr[3] = key->k[3];
		}
		WRITE_ONCE(s->seen, (pos->tick << 16) | (order & 0x7fff));
		/* 3: live (a full barrier: what came before is seen first). */
		__sync_val_compare_and_swap(&s->tag, busy, pos->tag);
		where = vj | INSERT_NEW | (best > RANK_STALE ? INSERT_EVICTED : 0);
		break;
	}
	bpf_spin_unlock(&lk->lock);
	return where;
}

/* After a packet's charges: note when its source was last seen (once per tick). */
static __always_inline void slot_touch(struct xdp_rl_slot *s, __u64 tick)
{
	__u64 seen = (tick << 16) | SEEN_FOUND;

	if (READ_ONCE(s->seen) != seen)
		WRITE_ONCE(s->seen, seen);
}

#endif /* XDP_RL_BUCKETS_H */
