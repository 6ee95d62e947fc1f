/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * maps.h - everything the XDP program keeps: the settings fixed at load
 * (.rodata), and the maps, under the names include/xdp_rl.h lists
 * (XDP_RL_MAPS). Every other header of bpf/ includes this one, so none
 * depends on where it is included.
 */
#ifndef XDP_RL_MAPS_H
#define XDP_RL_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdp_rl.h"

/* Fixed at load time by xdp-rl (user/lib/skel.c); the verifier prunes what they rule out. */
const volatile __u32 cfg_bytes = 0;
const volatile __u32 cfg_layers = 1; /* windows per slot, --max-layers */
const volatile __be32 cfg_v4_mask = 0xffffffff;
const volatile __be32 cfg_v6_mask[4] = { 0xffffffff, 0xffffffff, 0, 0 };
const volatile __u64 cfg_seed = 0; /* the tables' hash key */
/* Buckets in src4, src6, agg4 and agg6 (the maps' max_entries), in that order. */
const volatile __u32 cfg_buckets[4] = { 1, 1, 1, 1 };
/* Where each table's windows (and the shared budgets') begin in `drops` (enum xdp_rl_table). */
const volatile __u64 cfg_drops_base[5] = { 0, 0, 0, 0, 0 };
/* The `hot` map's entries - 1 (a power of two, xdp_rl_hot_entries). */
const volatile __u32 cfg_hot_mask = XDP_RL_HOT_ENTRIES_MIN - 1;
/* Drops past a limit a window counts in its count before the `hot` entries (hot.h). */
const volatile __u32 cfg_hot_after = XDP_RL_HOT_AFTER;
/* What keeps the sources' windows: enum xdp_rl_table_kind (--table; table.h). */
const volatile __u32 cfg_table = XDP_RL_TABLE_BUCKETS;
/* What a key is made of: enum xdp_rl_key_kind (--key). */
const volatile __u32 cfg_key = XDP_RL_KEY_SRC;

/*
 * The layout of the tables of family @v6 (IPv6: 1): whether they keep
 * 16-byte keys (xdp_rl_wide), a constant the verifier knows. What the
 * table code (table.h, buckets.h, lru.h, hot.h, admin.h) calls `v6` is
 * this layout, not the family: an IPv4 key with a port is laid out as an
 * IPv6 one.
 */
#define WIDE(v6) xdp_rl_wide(v6, cfg_key)
/*
 * Run by libxdp's dispatcher beside other XDP programs (--attach shared):
 * the program counts packets only while the handover map holds cfg_gen,
 * its generation (include/xdp_rl.h: struct xdp_rl_fixed's gen).
 */
const volatile __u32 cfg_shared = 0;
const volatile __u64 cfg_gen = 0;
/* Tests only: take the time from fake_now_ns instead of the kernel clock. */
const volatile __u32 cfg_fake_clock = 0;
__u64 fake_now_ns = 0;

/* Written by clock_sync, for xdp-rl to measure the tick clock's base. */
__u64 sync_jiffies = 0, sync_coarse_ns = 0;

/* The tables a key can live in (the order of cfg_buckets), and a --shared budget. */
enum table_id {
	T_SRC4 = XDP_RL_T_SRC4,
	T_SRC6 = XDP_RL_T_SRC6,
	T_AGG4 = XDP_RL_T_AGG4,
	T_AGG6 = XDP_RL_T_AGG6,
	T_SHARED = XDP_RL_T_SHARED,
};

/*
 * Where layer @layer of window @index of table @t is in `drops` and
 * `remote` (xdp_rl_drops_index on this program's bases); ~0 (no element)
 * for a @t past T_SHARED. The check is here, on the register the read of
 * cfg_drops_base[@t] uses: clang may compute that address before a caller's
 * own check of @t, in another register, and a verifier before Linux 6.3 or
 * so does not carry the bound over (6.1: "R1 unbounded memory access").
 */
static __always_inline __u32 drops_index(__u32 t, __u32 index, __u32 layer, __u32 room)
{
	barrier_var(t);
	if (t > T_SHARED)
		return ~0U;
	barrier_var(t);
	return xdp_rl_drops_index(cfg_drops_base, t, index, layer, room);
}

/* The settings: struct xdp_rl_config, one element. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_config);
} config SEC(".maps");

/* The live settings in force: the slot `active` names (include/xdp_rl.h). */
static __always_inline const struct xdp_rl_live *live_of(const struct xdp_rl_config *cfg)
{
	return &cfg->slot[cfg->active & 1];
}

/* The counters (enum xdp_rl_stat), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_stats);
} stats SEC(".maps");

/*
 * Source tables (table.h): buckets of slots. xdp-rl sets the number of
 * buckets from --max-sources, and the value size from the layers a slot has
 * room for, before load. With --table lru, xdp-rl gives the program, under
 * the same names, LRU hashes it made itself before load (with the BTF of
 * their values, user/lib/skel.c), and the bucket code is never run (cfg_table).
 */
#define SOURCE_TABLE(name)                                    \
	struct {                                              \
		__uint(type, BPF_MAP_TYPE_ARRAY);             \
		__uint(map_flags, BPF_F_MMAPABLE);            \
		__uint(max_entries, 1);                       \
		__uint(key_size, sizeof(__u32));              \
		__uint(value_size, XDP_RL_BUCKET_SLOTS * 64); \
	} name SEC(".maps")

SOURCE_TABLE(src4);
SOURCE_TABLE(src6);
/* --on-table-full aggregate: new sources refused a slot share a /24 or /48. */
SOURCE_TABLE(agg4);
SOURCE_TABLE(agg6);

/* Inserts into any table take one of these, chosen by the key's hash. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDP_RL_LOCKS);
	__type(key, __u32);
	__type(value, struct xdp_rl_lock);
} locks SEC(".maps");

/* The window that caps inserts (--new-sources N/DUR). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_state);
} newsrc SEC(".maps");

/* Per-prefix rules; the datapath looks only when live->nrules* says so. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_rule_key4);
	__type(value, struct xdp_rl_rule);
} rules4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_rule_key6);
	__type(value, struct xdp_rl_rule);
} rules6 SEC(".maps");

/* What each rule matched and dropped, per CPU, by rule id; then the lists'. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_RL_RULE_HIT_IDS);
	__type(key, __u32);
	__type(value, struct xdp_rl_rule_hits);
} rule_hits SEC(".maps");

/* The windows of --shared rules, by rule id; xdp-rl zeroes one on `rule add`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDP_RL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdp_rl_layers);
} shared SEC(".maps");

/*
 * Drops of windows with no budget left (include/xdp_rl.h, bpf/hot.h): a word
 * per window, moved there from each CPU's `hot` entries. xdp-rl sizes it
 * before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* A fleet's share of each window (include/xdp_rl.h), laid out as `drops`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} remote SEC(".maps");

/*
 * The bans of the bucket table's windows (--ban, include/xdp_rl.h, ban.h),
 * laid out as `drops`; an LRU table's are in its elements.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bans SEC(".maps");

/* The fleet agent's state and counters (include/xdp_rl.h): the program never touches it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_fleet);
} fleet SEC(".maps");

/*
 * xdp-rl capture (capture.h): its settings and lease (read on every
 * packet: one word, 0 when no capture runs), its counters per CPU, each
 * CPU's copy of the frame being judged, and the ring the frames go to.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_capture);
} capture SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_cap_cpu);
} cap_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_cap_record);
} cap_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XDP_RL_CAP_RING_BYTES);
} cap_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_RL_HOT_ENTRIES_MIN); /* xdp_rl_hot_entries, at load */
	__type(key, __u32);
	__type(value, struct xdp_rl_hot);
} hot SEC(".maps");

/*
 * LRU tables: the key of each `hot` entry's window, for its drops to find
 * the element (hot.h). xdp-rl leaves it one entry long for the bucket table.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDP_RL_HOT_ENTRIES_MIN); /* as `hot`, at load */
	__type(key, __u32);
	__type(value, struct xdp_rl_hot_key);
} hot_key SEC(".maps");

/*
 * The allow and deny lists: one LPM trie (include/xdp_rl.h), made by user
 * space as big as its lists and put in whole; none until the first.
 */
struct list_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1); /* the template's; each trie has its own */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_rule_key6);
	__type(value, __u32); /* XDP_RL_LIST_ENTRY */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct list_trie);
} lists SEC(".maps");

/* What user space knows of the lists in force (user space's; never read here). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xdp_rl_list_meta);
} list_meta SEC(".maps");

/* What `charge` put into windows, for `get` to show apart (user space's; never read here). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDP_RL_CHARGES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xdp_rl_charge_key);
	__type(value, struct xdp_rl_charge);
} charges SEC(".maps");

/*
 * Shared: the generation of the program that counts (cfg_gen). A
 * replacement runs beside the old program in the dispatcher until one
 * update of this word hands the packets over; the other passes them on.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} handover SEC(".maps");

/* LRU tables: the generation counter and the elements each table holds (enum xdp_rl_lru_word). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDP_RL_LRU_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} lru SEC(".maps");

/*
 * Over-limit events (events.h): the records, and the reader's lease (one
 * element, struct xdp_rl_ev_lease), read only when a window goes over.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XDP_RL_EVENTS_RING);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_rl_ev_lease);
} ev_lease SEC(".maps");

/*
 * Room per CPU for what the general path hands to charge() (struct
 * charge_req, entry SCRATCH_REQ) and what charge() notes of it (struct
 * charge, SCRATCH_CHARGE): on the stack they would take the call chain past
 * the 512 bytes the verifier allows (xdp_rl, limit_slow, charge,
 * window_hit_slow); and for the value an LRU table's insert copies in
 * (entries SCRATCH_LRU4 and 6, one per family: nothing but the key, seen
 * and the windows is ever written there, so drops and fleet words are 0).
 */
#define SCRATCH_SIZE   512
#define SCRATCH_REQ    0
#define SCRATCH_LRU4   1
#define SCRATCH_LRU6   2
#define SCRATCH_CHARGE 3
/*
 * The admin program's own LRU values: before Linux 6.3 BPF_PROG_TEST_RUN
 * leaves softirqs on, so the XDP program can run on the CPU in the middle
 * of an admin run and would rewrite a buffer they shared.
 */
#define SCRATCH_ADMIN_LRU4 4
#define SCRATCH_ADMIN_LRU6 5
#define SCRATCH_ENTRIES	   6

_Static_assert(XDP_RL_LRU_VALUE_MAX <= SCRATCH_SIZE, "an LRU value outgrew scratch");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SCRATCH_SIZE);
} scratch SEC(".maps");

#endif /* XDP_RL_MAPS_H */
