/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lru.h - the LRU table (load --table lru): the kernel's LRU hash
 * (BPF_MAP_TYPE_LRU_HASH), one element per key, --max-sources of them.
 * When it is full an insert takes the element of a key not looked up
 * lately (the kernel's choice, by its own approximate LRU lists). The
 * element's value (include/xdp_rl.h) holds its key, when its source was
 * last seen, and each layer's window, drops word and fleet word. table.h
 * is the interface the datapath uses; buckets.h the other table.
 *
 * Exactness while elements change hands. As in the bucket table, the
 * steady state takes no lock: a packet looks its key up, charges the
 * element's windows (window.h), and reads the key in the element again;
 * if it changed, the packet takes its charges back and looks again. What
 * differs is how an element changes hands. The kernel reuses an element at
 * once, without a grace period: an insert into a full table unlinks an
 * element from its hash chain and copies the new key and the value the
 * inserter gave into it, with plain stores in no defined order, while a CPU
 * that looked the old key up a moment before may still be reading and
 * charging it. xdp-rl cannot claim the element first (the bucket table's
 * BUSY step) nor move its windows' generations on (its window_close): the
 * copy overwrites whatever is there. So the argument rests on what the copy
 * writes, and on who may open a window in it:
 *
 * E1. Generations from one counter. Every window of a limiter with an LRU
 *     table takes its next generation from one counter (window_next_gen,
 *     the `lru` map): 1 to 65 535, round, never 0. Generation 0 is that of a
 *     *fresh* window, and an insert copies in fresh windows only: no window
 *     is ever open in a value the kernel copies (lru_insert; `reset
 *     --count` too, admin.h). So a generation a CPU read in the old key's
 *     windows does not come back in the element, whatever the copy wrote,
 *     before 65 535 windows have opened anywhere in the limiter: a swap
 *     prepared on it (a turnover, a start: window.h's I2, I5) and a
 *     take-back (window_undo checks the generation it charged) find nothing
 *     to match. An add made on the old windows is either overwritten by the
 *     copy, or lands in a fresh window, where the CPU that made it sees the
 *     generation is not the one it judged open, and takes it back (I1).
 *
 * E2. A fresh window opens only under its own key. Instead of a start and a
 *     count, a fresh window holds a 64-bit keyed hash of the key it was
 *     made for (xdp_rl_fresh), and window_hit_slow opens it only for a
 *     packet of that key. A CPU that holds the element for the old key
 *     finds fresh windows of another key, is told it lost the element
 *     (WINDOW_LOST), charges nothing and looks again. Half-way through the
 *     copy it may see the new key's fresh start beside its own opened
 *     count: that too is LOST, and it writes nothing (a start it "gave"
 *     the window, I5, would land on the new key's fresh start). And the
 *     new key opens its own fresh window on its fresh count alone,
 *     whatever the start beside it holds, so that no write of another
 *     key's CPU can keep it from opening (test_lru.c,
 *     lru_fresh_half_copied). A packet of the new
 *     key reaches the element only through the hash, once the kernel has
 *     linked it, so after the whole copy (the link is a release, and what
 *     the lookup finds is read through it).
 *
 * E3. The key is read again after the charge. A window of the new key
 *     opens only after the copy (E2), by an atomic instruction (a full
 *     barrier); a CPU of the old key whose add lands in it afterwards (a
 *     full barrier too) then reads the new key when it reads the key
 *     again, takes its charge back (E1: only from the window it charged)
 *     and looks again. Until then the new key's count holds one charge too
 *     many: a packet of the new key may be refused that could have passed,
 *     never passed one that should not.
 *
 * E4. An insert that fails leaves nothing anyone charges. The kernel takes
 *     a node for a BPF_NOEXIST insert (evicting another key's element when
 *     the table is full), copies the new key and its fresh windows into
 *     it, and only then, under the bucket lock, finds the key has an
 *     element already (another CPU inserted it first) and frees the node,
 *     unlinked. A CPU can reach that node only through a pointer it looked
 *     up while the node was linked: for the key it held before (the evicted
 *     one). Such a CPU finds the new key's fresh windows there (E2: LOST,
 *     nothing charged) or the new key in the element (E3: charges taken
 *     back). The new key's own packets reach its linked element, never the
 *     freed node; when the node is linked again, for whatever key, it is
 *     with that key's fresh windows (E1, E2). So the fresh windows a failed
 *     insert copied in open for nobody. (Before Linux 6.4 the kernel's
 *     -EEXIST reaches the program as an unsigned int: lru_insert compares
 *     it as an int.)
 *
 * The one-window path (xdp_rl.bpf.c's fast_charge) takes an element as
 * the general path's window_hit takes a window that is open: it opens
 * none (a fresh start is past any now: over, left to window_hit_slow), it
 * adds only to a window it read open, takes back an add whose count came
 * back of another generation (a fresh count's is 0, E1), and reads the key
 * again after the add (E3). A key it finds without an element is a new
 * source for the general path.
 *
 * So a packet passes only on a charge counted in a window of its own key,
 * and the bucket table's guarantee holds as it is: a source that keeps its
 * element gets exactly its limit; one that is evicted starts a new window
 * when it returns. The argument's limits: a CPU would have to stall between
 * a read of a window and its swap or take-back while 65 535 windows open
 * elsewhere in the limiter (E1: the counter is the limiter's, not the
 * key's, so under a flood of new sources at 10 Mpps that is a stall of
 * about 6.5 ms), or two keys' 64-bit keyed hashes would have to be equal
 * (E2). A window's next generation is never its own (window_next_gen:
 * when the counter comes round to it, the one after).
 *
 * Tested: in test_lru.c (lru_reuse_under_a_charge) one CPU charges
 * a key at limit 1 while another CPU's flood takes its element from under
 * it over and over, and each packet the key passes opened a window of its
 * own; the model test (test_model.c, make unit T=model TABLE=lru) checks
 * every verdict, window, insert and eviction against a reference, one CPU
 * at a time.
 *
 * Drops (hot.h) and the fleet's share (layers.h) are words in the element,
 * tagged with their window's generation, as the `drops` and `remote` maps'
 * words are: a word that the copy left, or that a CPU of the old key wrote
 * after it, names a generation no window of the new key has (E1).
 */
#ifndef XDP_RL_LRU_H
#define XDP_RL_LRU_H

/* Included by table.h, after its struct table_key and struct table_pos. */
#include "maps.h"
#include "window.h"
#include "pos.h"

#define LRU_EEXIST 17 /* bpf_map_update_elem's -EEXIST: the key has an element */

/* The key of @key under limit set @lsid, as an LRU table takes it, into pos->lkey. */
static __always_inline void lru_pos(struct table_pos *pos, const struct table_key *key,
				    const int v6, __u32 lsid)
{
	pos->lkey[0] = key->k[0];
	pos->lkey[1] = v6 ? key->k[1] : lsid;
	pos->lkey[2] = v6 ? key->k[2] : 0;
	pos->lkey[3] = v6 ? key->k[3] : 0;
	pos->lkey[4] = v6 ? lsid : 0;
	pos->lkey[5] = 0;
}

/* The fresh windows (start_gen, count_gen) of the key at @pos in table @t (E2). */
static __always_inline void lru_fresh(const struct table_pos *pos, const int v6, __u32 t,
				      __u64 *fresh)
{
	xdp_rl_fresh(pos->lkey, v6, v6 ? pos->lkey[4] : pos->lkey[1], t, cfg_seed, &fresh[0],
		     &fresh[1]);
}

static __always_inline struct xdp_rl_state *lru_states(void *e, const int v6)
{
	return e + xdp_rl_lru_head(v6);
}

/* Whether element @e still holds the key at @pos (E3). */
static __always_inline int lru_holds(void *e, const int v6, const struct table_pos *pos)
{
	const __u32 *k = e;

	if (!v6)
		return READ_ONCE(*(__u64 *)e) == *(const __u64 *)pos->lkey;
	return !((READ_ONCE(k[0]) ^ pos->lkey[0]) | (READ_ONCE(k[1]) ^ pos->lkey[1]) |
		 (READ_ONCE(k[2]) ^ pos->lkey[2]) | (READ_ONCE(k[3]) ^ pos->lkey[3]) |
		 (READ_ONCE(k[4]) ^ pos->lkey[4]));
}

/* After a packet's charges: note when its source was last seen (once per tick). */
static __always_inline void lru_touch(void *e, const int v6, __u64 tick)
{
	__u64 *seen = e + xdp_rl_lru_seen_off(v6), v = (tick << 16) | SEEN_FOUND;

	if (READ_ONCE(*seen) != v)
		WRITE_ONCE(*seen, v);
}

/* The element's fleet words (layers.h's remote_count), and layer @i's drops word (hot.h). */
static __always_inline __u64 *lru_remote(void *e, const int v6)
{
	return e + xdp_rl_lru_remote_off(v6, cfg_layers, 0);
}

static __always_inline __u64 *lru_drops(void *e, const int v6, __u32 i)
{
	return e + xdp_rl_lru_drops_off(v6, cfg_layers, i & (XDP_RL_MAX_LAYERS - 1));
}

/*
 * The value an insert of the key at @pos into table @t copies in: the key,
 * when it was seen, and fresh windows (E1, E2); drops and fleet words 0
 * (a per-CPU buffer, one per family, and the admin program's own, @admin:
 * nothing else is ever written there).
 */
static __always_inline __u64 *lru_value(const int v6, __u32 t, const struct table_pos *pos,
					const int admin)
{
	__u32 b = admin ? (v6 ? SCRATCH_ADMIN_LRU6 : SCRATCH_ADMIN_LRU4) :
			  (v6 ? SCRATCH_LRU6 : SCRATCH_LRU4),
	      *w;
	const __u32 head = xdp_rl_lru_head(v6) / 8;
	__u64 *v, fresh[2];
	int i;

	v = bpf_map_lookup_elem(&scratch, &b);
	if (!v)
		return NULL;
	w = (__u32 *)v;
	w[0] = pos->lkey[0];
	w[1] = pos->lkey[1];
	if (v6) {
		w[2] = pos->lkey[2];
		w[3] = pos->lkey[3];
		w[4] = pos->lkey[4];
		w[5] = 0;
	}
	v[head - 1] = (pos->tick << 16) | SEEN_FOUND;
	lru_fresh(pos, v6, t, fresh);
	for (i = 0; i < XDP_RL_MAX_LAYERS; i++) {
		if ((__u32)i >= cfg_layers)
			break;
		v[head + 2 * i] = fresh[0];
		v[head + 2 * i + 1] = fresh[1];
	}
	return v;
}

/*
 * One more element in table @t: whether the table was full, so that the
 * kernel gave the insert the element of another key (it does not say).
 */
static __always_inline int lru_added(__u32 t)
{
	__u32 k = XDP_RL_LRU_LIVE + (t & 3);
	__u64 *live = bpf_map_lookup_elem(&lru, &k);

	if (!live || __sync_fetch_and_add(live, 1) < cfg_buckets[t & 3])
		return 0;
	__sync_fetch_and_add(live, -1);
	return 1;
}

/*
 * Give the key at @pos an element in @map (table @t), unless it has one:
 * INSERT_NEW, with INSERT_EVICTED when the table was full (the kernel gave
 * it the element of another key); 0 if it has one (another CPU was
 * first); -1 if none could be had.
 */
static __always_inline long lru_insert(void *map, const int v6, __u32 t,
				       const struct table_pos *pos, const int admin)
{
	__u64 *v = lru_value(v6, t, pos, admin);
	long r;

	if (!v)
		return -1;
	/*
	 * The key is the value's first words (lru_value). Taken from there,
	 * not from @pos: that is a global function's argument, memory, which
	 * the verifier of Linux 6.1 refuses as a map key (later ones take it),
	 * and a copy on the stack would cost the insert's frame 24 bytes
	 * (scripts/check-stack.py).
	 */
	r = bpf_map_update_elem(map, v, v, BPF_NOEXIST);
	/*
	 * Compared as an int: before Linux 6.4 the map's update returned an
	 * int through a helper that returns a long, and an error reaches the
	 * program with its upper 32 bits 0 (-EEXIST as 4294967279).
	 */
	if ((int)r == -LRU_EEXIST)
		return 0;
	if ((int)r)
		return -1;
	return INSERT_NEW | (lru_added(t) ? INSERT_EVICTED : 0);
}

#endif /* XDP_RL_LRU_H */
