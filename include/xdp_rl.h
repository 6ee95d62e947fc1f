/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_rl.h - the one header shared by the XDP program (bpf/) and the xdp-rl
 * CLI (user/): the map and pin names, the per-source state word layout, the
 * live settings record and the per-CPU statistics.
 *
 * Only __u* types here, so that it compiles for the BPF target and for user
 * space alike.
 */
#ifndef XDP_RL_H
#define XDP_RL_H

#include <linux/types.h>
#include <linux/bpf.h>

/* ---- Names ------------------------------------------------------------- */

/* Pinned objects live in PIN_ROOT/<netns-inode>/<ifindex>/ */
#define XDP_RL_PIN_ROOT	 "xdp-rl"
#define XDP_RL_PIN_LINK	 "link"
#define XDP_RL_PIN_PROG	 "prog"
#define XDP_RL_PIN_ADMIN "admin"

/*
 * Every map of the program, in one list: X(ID, name, kind). bpf/maps.h
 * declares each map under this name, user space pins it under the same name
 * (user/limiter.c) and takes the skeleton's map by it (user/lib/skel.c), and
 * `load --force` decides by kind which maps a replacement keeps. BPF object
 * names are cut at 15 characters: keep names shorter.
 */
enum xdp_rl_map_kind {
	XDP_RL_NEW,	   /* made anew by every load: the old program keeps its own */
	XDP_RL_KEEP,	   /* kept by every replacement */
	XDP_RL_KEEP_TABLE, /* a source table: kept while its layout is the same */
	XDP_RL_KEEP_RULES, /* the rules: kept unless --rules brings new ones */
};

/* clang-format off */
#define XDP_RL_MAPS(X)						\
	X(CONFIG, config, XDP_RL_NEW)				\
	X(STATS, stats, XDP_RL_KEEP)				\
	X(SRC4, src4, XDP_RL_KEEP_TABLE)			\
	X(SRC6, src6, XDP_RL_KEEP_TABLE)			\
	X(RULES4, rules4, XDP_RL_KEEP_RULES)			\
	X(RULES6, rules6, XDP_RL_KEEP_RULES)			\
	X(RULE_HITS, rule_hits, XDP_RL_KEEP_RULES)		\
	X(SHARED, shared, XDP_RL_KEEP_RULES)			\
	X(AGG4, agg4, XDP_RL_KEEP_TABLE)			\
	X(AGG6, agg6, XDP_RL_KEEP_TABLE)			\
	X(NEWSRC, newsrc, XDP_RL_KEEP)				\
	X(LOCKS, locks, XDP_RL_KEEP)				\
	X(SCRATCH, scratch, XDP_RL_NEW)				\
	X(DROPS, drops, XDP_RL_KEEP_TABLE)			\
	X(HOT, hot, XDP_RL_KEEP_TABLE)				\
	X(REMOTE, remote, XDP_RL_KEEP_TABLE)			\
	X(FLEET, fleet, XDP_RL_KEEP)				\
	X(CAPTURE, capture, XDP_RL_KEEP)			\
	X(CAP_CPU, cap_cpu, XDP_RL_KEEP)			\
	X(CAP_BUF, cap_buf, XDP_RL_KEEP)			\
	X(CAP_RING, cap_ring, XDP_RL_KEEP)			\
	X(LRU, lru, XDP_RL_KEEP_TABLE)				\
	X(HOT_KEY, hot_key, XDP_RL_KEEP_TABLE)			\
	X(CHARGES, charges, XDP_RL_KEEP_TABLE)			\
	X(LISTS, lists, XDP_RL_KEEP)				\
	X(LIST_META, list_meta, XDP_RL_KEEP)			\
	X(HANDOVER, handover, XDP_RL_KEEP)			\
	X(EVENTS, events, XDP_RL_KEEP)				\
	X(EV_LEASE, ev_lease, XDP_RL_KEEP)			\
	X(BANS, bans, XDP_RL_KEEP_TABLE)

#define XDP_RL_MAP_ENUM(id, name, kind) XDP_RL_MAP_##id,
enum xdp_rl_map_id {
	XDP_RL_MAPS(XDP_RL_MAP_ENUM)
	XDP_RL_NMAPS,
};
#undef XDP_RL_MAP_ENUM

/*
 * The source tables, in one list: X(ID, name, v6), in the order of enum
 * xdp_rl_table (made from it). ID and name are the table's map in
 * XDP_RL_MAPS: user space reaches table XDP_RL_T_ID as pin PIN_ID
 * (user/limiter.h: pin_tables) and as the skeleton's map `name`.
 */
#define XDP_RL_TABLES(X)					\
	X(SRC4, src4, 0)					\
	X(SRC6, src6, 1)					\
	X(AGG4, agg4, 0)					\
	X(AGG6, agg6, 1)
/* clang-format on */

/* ---- Limits ------------------------------------------------------------ */

#define XDP_RL_MAX_VLAN_DEPTH 2	    /* 802.1ad outer + 802.1Q inner (QinQ) */
#define XDP_RL_MAX_LAYERS     4	    /* windows per key: --layer N/DUR, up to 4 */
#define XDP_RL_MAX_RULES      16384 /* per-prefix rules, IPv4 and IPv6 together */
#define XDP_RL_AGG4_PREFIX    24    /* --on-table-full aggregate: one window per /24 */
#define XDP_RL_AGG6_PREFIX    48    /* ... and per /48 */

/*
 * IPv6 extension headers walked to find the transport header, at most.
 * Linux walks any number; a longer chain is not classified (bpf/parse.h:
 * its protocol unknown), and every selector takes it (bpf/select.h).
 */
#define XDP_RL_MAX_EXT_HDRS 8

/*
 * The state of one window: two 64-bit words, changed only with BPF atomics
 * (bpf/window.h has the protocol and the invariants).
 *
 *   start_gen: when the window began, in ns on the window clock, a multiple
 *              of XDP_RL_GRAIN, with the window's generation in the low
 *              XDP_RL_GEN_BITS bits. A start of 0 means no window.
 *   count_gen: the window's generation in the top XDP_RL_GEN_BITS bits, and
 *              its count (packets or bytes, drops included) below.
 *
 * The generation ties a count to the window it belongs to. It only moves
 * forward, one step per window (turnover, reset, a slot passing to another
 * key), and wraps after 2^16 windows.
 */
#define XDP_RL_GEN_BITS	  16
#define XDP_RL_GEN_MASK	  ((1ULL << XDP_RL_GEN_BITS) - 1)
#define XDP_RL_GRAIN	  (1ULL << XDP_RL_GEN_BITS) /* 65.536 us */
#define XDP_RL_COUNT_BITS (64 - XDP_RL_GEN_BITS)
#define XDP_RL_COUNT_MASK ((1ULL << XDP_RL_COUNT_BITS) - 1)
/*
 * Counts stop growing here so that an increment can never carry into the
 * generation bits (the largest increment is one frame, far below the gap).
 */
#define XDP_RL_COUNT_SAT (1ULL << (XDP_RL_COUNT_BITS - 1))
/* The largest limit a user may set: below saturation, so it is exact. */
#define XDP_RL_LIMIT_MAX (XDP_RL_COUNT_SAT >> 1)
/*
 * A window whose start is further ahead of a CPU's reading of the clock
 * than this began on another clock (after --per-key and --aligned trade
 * places: CLOCK_MONOTONIC and CLOCK_TAI are decades apart), and is over. No
 * reading is this stale, so a window another CPU has just opened is never
 * taken for one.
 */
#define XDP_RL_AHEAD_MAX_NS (3600ULL * 1000000000ULL)

struct xdp_rl_state {
	__u64 start_gen;
	__u64 count_gen;
};

static inline __u64 xdp_rl_start_ns(__u64 start_gen)
{
	return start_gen & ~XDP_RL_GEN_MASK;
}

static inline __u64 xdp_rl_gen_of_start(__u64 start_gen)
{
	return start_gen & XDP_RL_GEN_MASK;
}

static inline __u64 xdp_rl_count(__u64 count_gen)
{
	return count_gen & XDP_RL_COUNT_MASK;
}

static inline __u64 xdp_rl_gen_of_count(__u64 count_gen)
{
	return count_gen >> XDP_RL_COUNT_BITS;
}

/*
 * Whether the window @start_gen of @window_ns is over at @now: it has no
 * start, or it lasted its length, or it began on another clock. Shared by
 * the datapath, `get`/`top` (which show such a window as empty) and the
 * model the datapath is tested against.
 */
static inline int xdp_rl_window_over(__u64 start_gen, __u64 now, __u64 window_ns)
{
	__u64 start = xdp_rl_start_ns(start_gen);

	return !start || now >= start + window_ns || start > now + XDP_RL_AHEAD_MAX_NS;
}

/*
 * The start of a window opened at @now, rounded up to XDP_RL_GRAIN (so a
 * window lasts its length and up to 65.5 us more, never less). Per key:
 * @now. Aligned: the multiple of @window_ns since the Unix epoch that @now
 * is in, on the TAI clock @now comes from (@tai_to_unix_ns converts).
 */
static inline __u64 xdp_rl_window_start(__u64 now, __u64 window_ns, int aligned,
					__s64 tai_to_unix_ns)
{
	__u64 s = now, unix_ns;

	if (aligned) {
		unix_ns = now + tai_to_unix_ns;
		s = unix_ns - unix_ns % window_ns - tai_to_unix_ns;
	}
	s = (s + XDP_RL_GRAIN - 1) & ~XDP_RL_GEN_MASK;
	/* A start of 0 means no window: the first multiple of a window at the epoch starts a grain late. */
	return s ? s : XDP_RL_GRAIN;
}

/* IPv6 sources are keyed by the address masked to --v6-prefix. */
struct xdp_rl_key6 {
	__u32 addr[4]; /* network byte order */
};

/*
 * What a key is made of (load --key): the packet's source or destination
 * address, masked to --v4-prefix or --v6-prefix, and with it the
 * destination port or not. Fixed at load: it decides the tables' layout.
 *
 * A key with a port is *wide* in both families: an IPv4 table then keeps
 * its keys as IPv6 tables do, 16 bytes after each slot's header (the tag
 * holds half the key's hash), as { address, port, 0, 0 }; an IPv6 key
 * holds the port in its last 16 bits, which a prefix of at most
 * XDP_RL_KEY6_PORT_PREFIX leaves free. The port is in network byte order
 * there; 0 where it cannot be read (not TCP or UDP, a later fragment, a
 * header cut short), so that such packets of one address share one budget
 * rather than slip past any.
 */
enum xdp_rl_key_kind {
	XDP_RL_KEY_SRC,
	XDP_RL_KEY_DST,
	XDP_RL_KEY_SRC_DPORT,
	XDP_RL_KEY_DST_DPORT,
	XDP_RL_KEY_KINDS,
};

#define XDP_RL_KEY6_PORT_PREFIX 112

/* Whether keys of @kind are the destination's address. */
static inline int xdp_rl_key_dst(__u32 kind)
{
	return kind & 1;
}

/* Whether keys of @kind hold the destination port. */
static inline int xdp_rl_key_port(__u32 kind)
{
	return (kind & 2) != 0;
}

/* Whether a table of family @v6 keeps 16-byte keys (IPv6, or any with a port). */
static inline int xdp_rl_wide(int v6, __u32 kind)
{
	return v6 || xdp_rl_key_port(kind);
}

/* ---- Source tables --------------------------------------------------------- */

/*
 * The sources (src4, src6) and the /24 and /48 budgets of --on-table-full
 * aggregate (agg4, agg6) live in tables of fixed size: BPF array maps of
 * buckets, mmapable so that xdp-rl reads and resets them in place. A bucket
 * holds XDP_RL_BUCKET_SLOTS slots; a key lives in one of two buckets chosen
 * by a keyed hash, so that finding it costs one bucket (IPv4 with one
 * window: two 64-byte lines) in the common case. bpf/table.h has the
 * protocol.
 *
 * A slot is a struct xdp_rl_slot, then, in IPv6 tables, the key (struct
 * xdp_rl_key6), then the state of each layer (struct xdp_rl_state).
 */
#define XDP_RL_BUCKET_SLOTS	4
#define XDP_RL_SLOTS_PER_SOURCE 2    /* slots per --max-sources: room to spare */
#define XDP_RL_LOCKS		1024 /* insert locks, striped by key hash */

#define XDP_RL_TAG_LIVE	 1ULL /* the slot holds the key in its tag */
#define XDP_RL_TAG_BUSY	 2ULL /* being handed to a new key: matches none */
#define XDP_RL_TAG_FLAGS 3ULL

struct xdp_rl_slot {
	/*
	 * 0: empty. IPv4: the key (as in the packet) in the high 32 bits.
	 * IPv6: the key's hash, with the key itself after this header.
	 */
	__u64 tag;
	/*
	 * When the key was last seen: the tick (jiffies) << 16, and below it
	 * the inserting CPU's insert count (15 bits; 0xffff once a packet found
	 * the slot), so that eviction goes roughly by age within a tick too.
	 */
	__u64 seen;
};

/* The lock array's element (insertions into a table take one). */
struct xdp_rl_lock {
	struct bpf_spin_lock lock;
};

#define XDP_RL_INLINE static inline __attribute__((always_inline))

XDP_RL_INLINE __u32 xdp_rl_slot_head(int v6)
{
	return sizeof(struct xdp_rl_slot) + (v6 ? sizeof(struct xdp_rl_key6) : 0);
}

XDP_RL_INLINE __u32 xdp_rl_slot_size(int v6, __u32 layers)
{
	return xdp_rl_slot_head(v6) + layers * 16; /* 16: struct xdp_rl_state */
}

/* Buckets for a table of @sources: XDP_RL_SLOTS_PER_SOURCE slots each. */
XDP_RL_INLINE __u32 xdp_rl_buckets(__u64 sources)
{
	return (sources * XDP_RL_SLOTS_PER_SOURCE + XDP_RL_BUCKET_SLOTS - 1) / XDP_RL_BUCKET_SLOTS;
}

/* A 64-bit mixer (splitmix64's finaliser): every input bit moves every output bit. */
XDP_RL_INLINE __u64 xdp_rl_mix(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/*
 * A key is a source address masked to its prefix (k[0] for IPv4, k[0..3]
 * for IPv6, as in the packet) and the limit set it is charged under: the
 * global limits' or a rule's (struct xdp_rl_live's and xdp_rl_rule's
 * lsid). Sources under different limits never share a window, even when
 * their masked addresses are the same.
 */
#define XDP_RL_LSID_MAX ((1U << 30) - 1)

/*
 * The hash of a key, keyed by the table's random seed so that nobody outside
 * can aim a flood at one bucket.
 */
XDP_RL_INLINE __u64 xdp_rl_hash(const __u32 *k, int v6, __u32 lsid, __u64 seed)
{
	__u64 h;

	if (!v6)
		return xdp_rl_mix((((__u64)lsid << 32) | k[0]) ^ seed);
	h = xdp_rl_mix((((__u64)k[0] << 32) | k[1]) ^ seed ^ lsid);
	return xdp_rl_mix(h ^ (((__u64)k[2] << 32) | k[3]));
}

/*
 * The tag a slot holding this key carries when it is live: the limit set in
 * the low 32 bits (above the flags), and above them the IPv4 address, or
 * for IPv6 half the hash (the address itself follows the slot's header).
 */
XDP_RL_INLINE __u64 xdp_rl_tag(const __u32 *k, int v6, __u32 lsid, __u64 h)
{
	__u64 low = ((__u64)lsid << 2) | XDP_RL_TAG_LIVE;

	return v6 ? (h & 0xffffffff00000000ULL) | low : ((__u64)k[0] << 32) | low;
}

/* The limit set of the key a tag names. */
XDP_RL_INLINE __u32 xdp_rl_tag_lsid(__u64 tag)
{
	return (__u32)tag >> 2;
}

/* The key's two buckets (distinct), from the two halves of its hash. */
XDP_RL_INLINE void xdp_rl_bucket_pair(__u64 h, __u32 nbuckets, __u32 *b1, __u32 *b2)
{
	*b1 = ((h & 0xffffffffULL) * nbuckets) >> 32;
	*b2 = ((h >> 32) * nbuckets) >> 32;
	if (*b2 == *b1)
		*b2 = *b1 + 1 < nbuckets ? *b1 + 1 : 0;
}

/* The insert lock of a key. */
XDP_RL_INLINE __u32 xdp_rl_lock_of(__u64 h)
{
	return (h >> 20) & (XDP_RL_LOCKS - 1);
}

/* ---- The LRU table (load --table lru) ------------------------------------- */

/*
 * What keeps the sources' windows (`load --table`, struct xdp_rl_fixed's
 * table): xdp-rl's own bucket table above (the default), or the kernel's
 * LRU hash (BPF_MAP_TYPE_LRU_HASH, --max-sources entries), one element per
 * key. The program has both and a load-time constant (cfg_table) picks one;
 * bpf/table.h is the interface the datapath charges through, bpf/lru.h the
 * LRU hash behind it, with its exactness argument.
 */
enum xdp_rl_table_kind {
	XDP_RL_TABLE_BUCKETS,
	XDP_RL_TABLE_LRU,
};

/*
 * An LRU table's key: the masked address (as in the packet) and its limit
 * set; 8 bytes in src4 and agg4, 20 in src6 and agg6.
 */
struct xdp_rl_lru_key4 {
	__u8 addr[4];
	__u32 lsid;
};

struct xdp_rl_lru_key6 {
	__u8 addr[16];
	__u32 lsid;
};

/*
 * An LRU table's value, one element per key, whose size depends on the
 * layers it has room for (L, --max-layers), so it is a layout more than a
 * struct (xdp-rl describes it to the kernel in BTF at load, user/lib/skel.c, so
 * that `bpftool map dump` names every field):
 *
 *   key        the key this element holds (struct xdp_rl_lru_key4 or 6),
 *              read again after every charge: an element evicted under a
 *              packet and given to another key says so here;
 *   (4 bytes of padding in IPv6 tables)
 *   seen       when its source was last seen, as a slot's (struct xdp_rl_slot)
 *   window[L]  each layer's window (struct xdp_rl_state);
 *   drops[L]   each window's drops counted apart (bpf/hot.h), as the
 *              `drops` map's words are for the bucket table;
 *   remote[L]  the fleet's share of each window, as the `remote` map's
 *              words are for the bucket table;
 *   bans[L]    each window's ban (--ban), as the `bans` map's words are
 *              for the bucket table.
 */
#define XDP_RL_LRU_LAYER_SIZE 40 /* a window, its drops, fleet and ban words */

XDP_RL_INLINE __u32 xdp_rl_lru_key_size(int v6)
{
	return v6 ? sizeof(struct xdp_rl_lru_key6) : sizeof(struct xdp_rl_lru_key4);
}

/* Where the windows begin: after the key (padded to 8 bytes) and seen. */
XDP_RL_INLINE __u32 xdp_rl_lru_head(int v6)
{
	return v6 ? 32 : 16;
}

XDP_RL_INLINE __u32 xdp_rl_lru_value_size(int v6, __u32 layers)
{
	return xdp_rl_lru_head(v6) + layers * XDP_RL_LRU_LAYER_SIZE;
}

/* The largest value: IPv6, XDP_RL_MAX_LAYERS layers. */
#define XDP_RL_LRU_VALUE_MAX (32 + XDP_RL_MAX_LAYERS * XDP_RL_LRU_LAYER_SIZE)

/* Offsets in a value of @layers layers: seen, layer @i's drops word, its fleet word. */
XDP_RL_INLINE __u32 xdp_rl_lru_seen_off(int v6)
{
	return xdp_rl_lru_head(v6) - 8;
}

XDP_RL_INLINE __u32 xdp_rl_lru_drops_off(int v6, __u32 layers, __u32 i)
{
	return xdp_rl_lru_head(v6) + layers * 16 + i * 8;
}

XDP_RL_INLINE __u32 xdp_rl_lru_remote_off(int v6, __u32 layers, __u32 i)
{
	return xdp_rl_lru_head(v6) + layers * 24 + i * 8;
}

XDP_RL_INLINE __u32 xdp_rl_lru_ban_off(int v6, __u32 layers, __u32 i)
{
	return xdp_rl_lru_head(v6) + layers * 32 + i * 8;
}

/*
 * A window of an element no packet has charged yet is *fresh*: generation
 * 0 (no window opened in an LRU table ever has it) and, instead of a start
 * and a count, a 64-bit keyed hash of the key it was made for, spread over
 * both words, so that it can be opened only under that key (bpf/lru.h says
 * why). Its start_gen has
 * the top bit set, a start further ahead than any clock: every reader takes
 * it for a window that is over, and shows it as empty.
 */
#define XDP_RL_FRESH_TOP   (1ULL << 63)
#define XDP_RL_FRESH_COUNT ((1ULL << 46) - 1) /* the tag's bits in count_gen */

/* The fresh windows of key @k (IPv4: k[0]) under @lsid in table @table. */
XDP_RL_INLINE void xdp_rl_fresh(const __u32 *k, int v6, __u32 lsid, __u32 table, __u64 seed,
				__u64 *start_gen, __u64 *count_gen)
{
	__u64 h = xdp_rl_hash(k, v6, lsid, seed ^ xdp_rl_mix(table + 1));

	*start_gen = XDP_RL_FRESH_TOP | ((h >> 17) << 16);
	*count_gen = xdp_rl_mix(h) & XDP_RL_FRESH_COUNT;
}

/*
 * The id an LRU element's windows go by in the per-CPU `hot` entries (in
 * xdp_rl_hot_id's index): 32 bits of its fresh windows' tag, a keyed hash
 * of its key (the `hot_key` array beside `hot` keeps the key itself, for
 * the drops to find the element).
 */
XDP_RL_INLINE __u32 xdp_rl_lru_hot_index(__u64 fresh_count)
{
	return (__u32)fresh_count;
}

/*
 * The `lru` map's words: the generation counter every window of an LRU
 * table takes its generation from (bpf/lru.h), and how many elements each
 * table holds (for its evictions: the kernel does not say).
 */
enum xdp_rl_lru_word {
	XDP_RL_LRU_GEN,
	XDP_RL_LRU_LIVE, /* + enum xdp_rl_table: src4, src6, agg4, agg6 */
	XDP_RL_LRU_WORDS = XDP_RL_LRU_LIVE + 4,
};

/*
 * What `charge` and `reset --count` put into a window, recorded by user
 * space beside the tables (the program never reads it), so that `get` shows
 * it apart from the packets the window counted. Keyed as the window is: its
 * table (enum xdp_rl_table, or XDP_RL_CHARGE_SHARED for a --shared rule's
 * budget, lsid then the rule's id), its limit set and key. A record counts
 * for a layer only while that layer's window is the one it names (its
 * start): a window that ended took its record with it.
 */
#define XDP_RL_CHARGE_SHARED 0xffffffffU
#define XDP_RL_CHARGES	     16384 /* records kept; the ended ones make room */

struct xdp_rl_charge_key {
	__u32 table;
	__u32 lsid;
	__u32 k[4];
};

struct xdp_rl_charge {
	__u64 started_ns[XDP_RL_MAX_LAYERS]; /* the window's start, as its state says it */
	__u64 total[XDP_RL_MAX_LAYERS];	     /* charged to it */
	__u64 in_budget[XDP_RL_MAX_LAYERS];  /* of which it took from the limit's budget */
	__u64 ends_ns;			     /* when its last window ends: then it may go */
};

/*
 * The key `hot_key` keeps beside a per-CPU hot entry of an LRU element's
 * window: as the table takes it (struct xdp_rl_lru_key4 or 6), then 0.
 */
struct xdp_rl_hot_key {
	__u32 key[6];
};

/* The longest window xdp-rl takes (366 days). */
#define XDP_RL_WINDOW_MAX_NS (366ULL * 24 * 3600 * 1000000000ULL)

/* ---- Drops of a window with no budget left --------------------------------- */

/*
 * A packet of a source whose window has no budget left (count > limit) is
 * dropped on a read of the count (bpf/hot.h). Its drop is counted in one
 * of two places:
 *
 *   - in the count itself, by the atomic add a pass makes, on the line the
 *     read brought in: while the count is at most XDP_RL_HOT_AFTER drops
 *     (of the packet's size, with --bytes) past the limit. A drop then
 *     touches no line a pass does not.
 *   - past that, in this CPU's entry of the `hot` map (a per-CPU array of
 *     struct xdp_rl_hot, direct-mapped by window, sized at load by
 *     xdp_rl_hot_entries), moved to the window's word in the `drops` map
 *     (one __u64 per window: its generation in the top 16 bits, drops
 *     below, in packets or bytes as the count) when XDP_RL_HOT_FLUSH packets
 *     have gathered, or when another window needs the entry. These are for
 *     one source flooding on many CPUs: no write to a line they share.
 *
 * What a window has been offered is its count, plus the drops in its word
 * while it names the same generation, plus what each CPU holds for it.
 * The program's cfg_hot_after is XDP_RL_HOT_AFTER (tests set it before
 * load; 0: every drop apart).
 */
#define XDP_RL_HOT_AFTER 4096

#define XDP_RL_HOT_ENTRIES_MIN 1024
#define XDP_RL_HOT_ENTRIES_MAX 16384
#define XDP_RL_HOT_FLUSH       256
#define XDP_RL_DROPS_BITS      48
#define XDP_RL_DROPS_MASK      ((1ULL << XDP_RL_DROPS_BITS) - 1)

struct xdp_rl_hot {
	__u64 id;    /* xdp_rl_hot_id of the window whose drops these are; 0: none */
	__u64 drops; /* packets, or bytes with --bytes */
	__u64 n;     /* packets: moved to the window's word at XDP_RL_HOT_FLUSH */
};

/* The window of layer @layer of slot @index of table @table (a rule id for XDP_RL_T_SHARED), generation @gen. */
XDP_RL_INLINE __u64 xdp_rl_hot_id(__u32 table, __u32 index, __u32 layer, __u64 gen)
{
	return ((__u64)(table * XDP_RL_MAX_LAYERS + layer + 1) << 48) | ((__u64)index << 16) |
	       (gen & 0xffff);
}

/*
 * Entries per CPU for a table of @max_sources: a sixteenth of it, a power
 * of two in [XDP_RL_HOT_ENTRIES_MIN, _MAX] (384 KiB per CPU at most). A
 * drop whose entry holds another window's drops moves those to their word
 * first, a compare-and-swap on memory other CPUs write: with fewer entries
 * than windows dropping at once, most drops would.
 */
XDP_RL_INLINE __u32 xdp_rl_hot_entries(__u64 max_sources)
{
	__u32 n = XDP_RL_HOT_ENTRIES_MIN;

	while (n < XDP_RL_HOT_ENTRIES_MAX && n < max_sources / 16)
		n <<= 1;
	return n;
}

/* Its entry in each CPU's hot array of @mask + 1 entries: by window, whatever its generation. */
XDP_RL_INLINE __u32 xdp_rl_hot_entry(__u64 id, __u32 mask)
{
	return xdp_rl_mix(id >> 16) & mask;
}

/* The `drops` map: each table's windows, then the shared budgets', in the order of enum xdp_rl_table. */
/*
 * @base is volatile: the program passes its .rodata array, which clang must
 * read, not fold to its initializer (all 0) where @table is a constant.
 */
XDP_RL_INLINE __u64 xdp_rl_drops_index(const volatile __u64 *base, __u32 table, __u32 index,
				       __u32 layer, __u32 room)
{
	return base[table] + (__u64)index * room + layer;
}

/* ---- A fleet's share of a window (xdp-rl fleet) ----------------------------- */

/*
 * What the other servers of a fleet counted in a window, written by the
 * fleet agent (user/fleet.c) into the `remote` map, a word per window laid
 * out as `drops` (xdp_rl_drops_index): the window's generation in the top
 * 16 bits (the agent read it from the window it synced), the count below.
 * With XDP_RL_F_FLEET, a packet passes only while the window's own count
 * plus the remote count of the same generation is within the limit; a
 * word of another generation is of a window over, and counts nothing.
 */
#define XDP_RL_REMOTE_BITS 48
#define XDP_RL_REMOTE_MASK ((1ULL << XDP_RL_REMOTE_BITS) - 1)

/* ---- Bans (--ban DUR) ---------------------------------------------------- */

/*
 * A key whose charge takes one of its windows over its limit, under a limit
 * with --ban DUR, is refused every packet for DUR from then (bpf/ban.h).
 * The ban is a word per window, laid out as `drops` in the `bans` map for
 * the bucket table, in the element for an LRU table, in the format of
 * start_gen: when the ban ends on the window clock (a multiple of
 * XDP_RL_GRAIN, 0: none) and, in the low XDP_RL_GEN_BITS bits, the
 * generation of the window it holds. A ban holds while its window is the
 * state's window now and its end is ahead: a window that ends, is reset
 * or passes to another key takes its ban with it.
 */
#define XDP_RL_BAN_MAX_NS XDP_RL_WINDOW_MAX_NS

/* The ban word ending at @until_ns (rounded up to XDP_RL_GRAIN) of window generation @gen. */
static inline __u64 xdp_rl_ban_word(__u64 until_ns, __u64 gen)
{
	return ((until_ns + XDP_RL_GRAIN - 1) & ~XDP_RL_GEN_MASK) | (gen & XDP_RL_GEN_MASK);
}

/*
 * Whether ban word @ban holds at @now for a window whose count_gen is @count_gen:
 * its window is that one, and it ends after @now (and not so far ahead that
 * it was set on another clock, as xdp_rl_window_over's start).
 */
static inline int xdp_rl_ban_holds(__u64 ban, __u64 count_gen, __u64 now)
{
	__u64 until = xdp_rl_start_ns(ban);

	return until > now && xdp_rl_gen_of_start(ban) == xdp_rl_gen_of_count(count_gen) &&
	       until <= now + XDP_RL_BAN_MAX_NS + XDP_RL_GRAIN;
}

/*
 * The fleet agent's own state, for `stats`, `metrics` and the next agent:
 * the one element of the `fleet` map (mmapable), written by the agent only
 * (user/fleet.c), each word with one atomic store. Counters run from the
 * agent's start; the program never reads or writes them.
 *
 * Every counter, in one list: X(ID, name, what it counts, metric), as
 * XDP_RL_STATS: `stats` shows <name>, `metrics` exports
 * xdp_rl_fleet_<metric>_total.
 */
/* clang-format off */
#define XDP_RL_FLEET_STATS(X)							\
	X(ROUNDS, rounds, "sync rounds that Redis answered in full", "syncs")	\
	X(ERRORS, sync_errors, "sync rounds that failed: Redis unreachable, slow, refusing, or windows per key", \
	  "sync_errors")							\
	X(CONNECTS, connects, "connections made to Redis (AUTH included)", "connects") \
	X(WINDOWS, windows_synced, "windows pushed or read, over every round", "windows_synced") \
	X(LEFT_OUT, windows_left_out, "windows past --sync-above left out by --max-synced", \
	  "windows_left_out")							\
	X(COMMANDS, commands, "Redis commands sent", "redis_commands")		\
	X(BYTES_OUT, bytes_sent, "bytes sent to Redis", "redis_bytes{direction=\"sent\"}") \
	X(BYTES_IN, bytes_received, "bytes received from Redis", "redis_bytes{direction=\"received\"}")

#define XDP_RL_FLEET_STAT_ENUM(id, name, help, metric) XDP_RL_FLEET_##id,
enum xdp_rl_fleet_stat {
	XDP_RL_FLEET_STATS(XDP_RL_FLEET_STAT_ENUM)
	XDP_RL_FLEET_STAT_MAX,
};
#undef XDP_RL_FLEET_STAT_ENUM
/* clang-format on */

/* What the agent is doing (struct xdp_rl_fleet's state). */
enum xdp_rl_fleet_state {
	XDP_RL_FLEET_STOPPED,  /* no agent (or it exited cleanly) */
	XDP_RL_FLEET_SYNCING,  /* connected, syncing every interval */
	XDP_RL_FLEET_RETRYING, /* Redis unreachable: reconnecting with back-off */
	XDP_RL_FLEET_PAUSED,   /* windows per key: nothing a fleet can share */
};

struct xdp_rl_fleet {
	__u64 c[XDP_RL_FLEET_STAT_MAX]; /* enum xdp_rl_fleet_stat */
	__u64 pid;			/* the agent's; 0: none since a clean exit */
	__u64 pid_start;		/* its start (/proc/PID/stat, ticks since boot) */
	__u64 state;			/* enum xdp_rl_fleet_state */
	__u64 started_unix_ns;
	__u64 last_sync_unix_ns; /* the last round Redis answered in full; 0: none */
	__u64 synced;		 /* windows synced in the last round */
	__u64 round_ns;		 /* how long the last round took: scan, Redis, writes */
	__u64 sync_ns;		 /* --sync */
	char redis[128];	 /* --redis, as given */
	char group[64];		 /* --group */
};

/* ---- Settings ---------------------------------------------------------- */

#define XDP_RL_F_DRY_RUN      (1U << 0) /* count, never drop */
#define XDP_RL_F_ALIGNED      (1U << 1) /* windows aligned to the epoch */
#define XDP_RL_F_COARSE_CLOCK (1U << 2) /* per key, on the tick clock */
#define XDP_RL_F_SELECT	      (1U << 3) /* a selector is set (the limit's or a rule's): parse L4 */
#define XDP_RL_F_FLEET	      (1U << 4) /* windows are shared with a fleet: consult `remote` */
#define XDP_RL_F_LISTS4	      (1U << 5) /* the lists hold IPv4 prefixes: look them up */
#define XDP_RL_F_LISTS6	      (1U << 6) /* ... and IPv6 prefixes */
/*
 * A ban may hold (--ban is set, globally or in a rule, or was since the
 * tables were made): every charge first looks at the key's ban words.
 */
#define XDP_RL_F_BANS (1U << 7)

/*
 * Which packets a limit (or a rule) applies to: all, or those of a protocol,
 * to some destination ports, or TCP SYNs without ACK (new connections).
 * Packets it does not select pass untouched. A later fragment carries no
 * ports: it is selected by a port list if its protocol is (fail closed),
 * never by --syn.
 */
#define XDP_RL_MAX_PORT_RANGES 8

struct xdp_rl_select {
	__u8 proto;  /* 0: any; IPPROTO_TCP, _UDP, _ICMP or _ICMPV6 */
	__u8 syn;    /* 1: TCP SYN without ACK only */
	__u8 nports; /* 0: any destination port; else port_lo/hi[0..nports) */
	__u8 pad;
	__u16 port_lo[XDP_RL_MAX_PORT_RANGES]; /* host byte order, inclusive */
	__u16 port_hi[XDP_RL_MAX_PORT_RANGES];
};

/* Whether @s selects every packet. */
static inline int xdp_rl_select_all(const struct xdp_rl_select *s)
{
	return !s->proto && !s->syn && !s->nports;
}

/*
 * Whether @s takes a packet read whole (user space: bpf/select.h is the
 * datapath's): of protocol @proto, to port @dport (TCP, UDP), a TCP SYN
 * without ACK if @syn.
 */
static inline int xdp_rl_select_takes(const struct xdp_rl_select *s, __u8 proto, __u16 dport,
				      int syn)
{
	int i;

	if ((s->proto && s->proto != proto) || (s->syn && (proto != 6 || !syn)))
		return 0;
	if (!s->nports)
		return 1;
	if (proto != 6 && proto != 17)
		return 0;
	for (i = 0; i < s->nports && i < XDP_RL_MAX_PORT_RANGES; i++)
		if (dport >= s->port_lo[i] && dport <= s->port_hi[i])
			return 1;
	return 0;
}

/* Link-local sources (fe80::/10, 169.254.0.0/16): --link-local. */
enum xdp_rl_link_local {
	XDP_RL_LL_ADDRESS, /* each keyed by its whole address (default) */
	XDP_RL_LL_PREFIX,  /* masked to --v4-prefix/--v6-prefix as any source */
	XDP_RL_LL_EXEMPT,  /* never limited: passed untouched */
};

/*
 * One layer of a limit: a fixed window (burst 0), up to @limit packets (or
 * bytes) per window of @window_ns; or a rate (--rate N/DUR --burst B,
 * bpf/rate.h): @limit per @window_ns on average, @burst at once, so that in
 * any interval of length t a key passes at most burst + limit * t /
 * window_ns (xdp_rl_rate_fill works out the rest).
 */
struct xdp_rl_layer {
	__u64 limit;
	__u64 window_ns;
	__u64 burst; /* 0: a fixed window; a rate: B */
	__u64 per_fp; /* a rate: ns a unit costs, window_ns / limit in 40.24 fixed point, rounded up */
	__u64 tau_ns; /* a rate with --bytes: how far past now a charge may take its TAT (xdp_rl_rate_tau) */
};

/* Whether layer @l is a rate (--rate). */
static inline int xdp_rl_is_rate(const struct xdp_rl_layer *l)
{
	return l->burst != 0;
}

/*
 * A rate's cost per unit (per_fp) is in fixed point: 40 bits of ns, 24 of
 * fraction. The slowest rate a unit may cost is 2^40 ns (about 18
 * minutes); a frame (under 2^16 bytes) times it stays within 64 bits, and
 * the fraction's rounding up costs under 2^-24 ns a unit.
 */
#define XDP_RL_RATE_FRAC_BITS 24
#define XDP_RL_RATE_FRAC_MASK ((1ULL << XDP_RL_RATE_FRAC_BITS) - 1)
#define XDP_RL_RATE_PER_MAX   (1ULL << (64 - XDP_RL_RATE_FRAC_BITS))

/*
 * What a charge of @inc units (packets or bytes) costs a rate, in ns:
 * inc * window_ns / limit, rounded up, so that a key passes no more than
 * the rate, never less than one ns per unit less (include/xdp_rl.h's
 * XDP_RL_RATE_PER_MAX keeps it in 64 bits for any frame).
 */
static inline __u64 xdp_rl_rate_cost(__u64 per_fp, __u64 inc)
{
	return inc * (per_fp >> XDP_RL_RATE_FRAC_BITS) +
	       ((inc * (per_fp & XDP_RL_RATE_FRAC_MASK) + XDP_RL_RATE_FRAC_MASK) >>
		XDP_RL_RATE_FRAC_BITS);
}
/*
 * The longest burst, in time (tau_ns, the time the rate takes to earn the
 * burst back: 2^44 ns, about 4.9 hours), so that a TAT never runs past its
 * state's offset bits (bpf/rate.h).
 */
#define XDP_RL_RATE_TAU_MAX (1ULL << 44)

/*
 * How far past now a charge may take a rate's TAT (the burst, in time).
 * Packets: each costs exactly cost(1), so B of them at once fit in B *
 * cost(1), and R1 (bpf/rate.h) gives k * cost(1) <= t + B * cost(1): k <=
 * B + t / cost(1) <= B + N * t / DUR. Bytes (@bytes): frames cost their
 * sizes rounded up one by one, so the burst is B * DUR / N rounded down
 * (a frame of a B-byte burst may miss it by under a ns).
 */
static inline __u64 xdp_rl_rate_tau(const struct xdp_rl_layer *l, int bytes)
{
	return bytes ? l->tau_ns : l->burst * xdp_rl_rate_cost(l->per_fp, 1);
}

#ifndef __bpf__
/*
 * Fill in the rate layer @l of @n per @window_ns with burst @burst: its
 * cost per unit and its tolerance. Returns 0, or -1 if the rate is slower
 * than XDP_RL_RATE_PER_MAX per unit or the burst takes longer than
 * XDP_RL_RATE_TAU_MAX to earn back (then @l is unchanged).
 */
static inline int xdp_rl_rate_fill(struct xdp_rl_layer *l, __u64 n, __u64 window_ns, __u64 burst)
{
	unsigned __int128 per, tau;

	if (!n || !window_ns || !burst)
		return -1;
	per = (((unsigned __int128)window_ns << XDP_RL_RATE_FRAC_BITS) + n - 1) / n;
	tau = (unsigned __int128)burst * window_ns / n;
	if (per >= (unsigned __int128)XDP_RL_RATE_PER_MAX << XDP_RL_RATE_FRAC_BITS ||
	    tau > XDP_RL_RATE_TAU_MAX)
		return -1;
	/* The packets' burst (xdp_rl_rate_tau) too. */
	if ((unsigned __int128)burst * xdp_rl_rate_cost((__u64)per, 1) > XDP_RL_RATE_TAU_MAX)
		return -1;
	l->limit = n;
	l->window_ns = window_ns;
	l->burst = burst;
	l->per_fp = (__u64)per;
	l->tau_ns = (__u64)tau;
	return 0;
}
#endif

/*
 * A rate layer's state (bpf/rate.h) is a struct xdp_rl_state as a window's,
 * whose count is how far the key's theoretical arrival time (TAT: when it
 * will have paid for every unit it passed) is past the start:
 *
 *   start_gen: when the key's episode began (its first charge since it
 *              last owed nothing), rounded down to XDP_RL_GRAIN, and the
 *              generation;
 *   count_gen: the generation on top; XDP_RL_RATE_REFUSING once a packet
 *              of the episode was refused; TAT - start below it, in ns.
 *
 * The key owes nothing, and its "window" is over, once TAT <= now.
 */
#define XDP_RL_RATE_OFF_BITS 46
#define XDP_RL_RATE_OFF_MASK ((1ULL << XDP_RL_RATE_OFF_BITS) - 1)
#define XDP_RL_RATE_REFUSING (1ULL << XDP_RL_RATE_OFF_BITS)

/* The TAT of a rate state whose words read @start_gen and @count_gen (0: none). */
static inline __u64 xdp_rl_rate_tat(__u64 start_gen, __u64 count_gen)
{
	__u64 start = xdp_rl_start_ns(start_gen);

	if (!start || xdp_rl_gen_of_start(start_gen) != xdp_rl_gen_of_count(count_gen))
		return 0;
	return start + (count_gen & XDP_RL_RATE_OFF_MASK);
}

/* The layers of a limit or a rule, as one object (struct xdp_rl_live, xdp_rl_rule). */
struct xdp_rl_layers_limits {
	struct xdp_rl_layer layer[XDP_RL_MAX_LAYERS];
};

/* What happens to a new source when --new-sources refuses it a table entry. */
enum xdp_rl_on_full {
	XDP_RL_FULL_PASS,      /* pass it, unlimited */
	XDP_RL_FULL_DROP,      /* drop it */
	XDP_RL_FULL_AGGREGATE, /* charge it to its /24 (IPv4) or /48 (IPv6) */
};

/* What `xdp-rl set` (and `rule add/del`) change live; read on every packet. */
struct xdp_rl_live {
	struct xdp_rl_layer layer[XDP_RL_MAX_LAYERS];
	struct xdp_rl_layer new_sources; /* limit 0: no cap on inserts */
	__s64 tai_to_unix_ns;		 /* CLOCK_REALTIME - CLOCK_TAI, for --aligned */
	__u32 nlayers;			 /* 1..XDP_RL_MAX_LAYERS, at most fixed.max_layers */
	__u32 flags;			 /* XDP_RL_F_* */
	__u32 on_full;			 /* enum xdp_rl_on_full */
	__u32 lsid; /* the limit set of these layers (keys charged under them) */
	__u32 pad;
	/*
	 * The longest window of any limit in force, the rules' included: a
	 * key charged under a rule whose windows started longer ago than this
	 * is over (the table ranks slots to give up by it).
	 */
	__u64 max_window_ns;
	__u32 nrules4; /* rules in rules4: 0 skips the lookup */
	__u32 nrules6;
	/*
	 * XDP_RL_F_COARSE_CLOCK: the time is jiffies * tick_ns + jiffies_base_ns
	 * (the kernel's tick clock, CLOCK_MONOTONIC_COARSE, read for the price
	 * of a load; xdp-rl measures the base at load).
	 */
	__u32 tick_ns;
	__s64 jiffies_base_ns;
	/*
	 * When the limits (layers, alignment or rules) last changed, on the
	 * window clock (CLOCK_TAI if aligned, else CLOCK_MONOTONIC). A window
	 * opened before then may have been counted under other limits, so
	 * `get` and `top` split only later windows into passed and dropped.
	 */
	__u64 limits_since_ns;
	struct xdp_rl_select select; /* the packets the global limits apply to */
	__u32 link_local;	     /* enum xdp_rl_link_local */
	__u32 pad2;
	__u64 ban_ns; /* --ban: a key over the global limits is refused this long; 0: no ban */
	/*
	 * The longest ban any limit has had since the tables were made (the
	 * rules' included): with XDP_RL_F_BANS the table keeps a slot whose
	 * windows started less than this plus their length ago as open when it
	 * picks one to give to a new key (bpf/buckets.h), so that the slot of
	 * a key under a ban, whose window may be over, is not taken first.
	 */
	__u64 max_ban_ns;
};

/* Fixed at load; the datapath has them as .rodata, this copy is for status. */
struct xdp_rl_fixed {
	__u64 max_sources;    /* sources each of src4 and src6 has room for */
	__u64 loaded_at_unix; /* seconds */
	__u64 seed;	      /* the source tables' hash key (xdp_rl_hash) */
	/*
	 * The network namespace loaded in (SO_NETNS_COOKIE, unique for the
	 * boot): pins are filed by the namespace's inode, which a namespace
	 * made after this one's deletion may reuse.
	 */
	__u64 netns_cookie;
	__u32 ifindex;
	__u32 bytes; /* 1: count bytes, 0: count packets */
	__u32 v4_prefix;
	__u32 v6_prefix;
	__u32 xdp_mode;	  /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	__u32 max_layers; /* layers each source's state has room for */
	char ifname[16];
	__u32 table; /* enum xdp_rl_table_kind: --table */
	/* enum xdp_rl_attach: --attach, then what the load did (alone or shared). */
	__u32 attach;
	/* Shared: the run priority in the dispatcher (--priority). */
	__u32 priority;
	/* Shared: after XDP_PASS the next program runs (--pass-to next), else the stack. */
	__u32 pass_next;
	/*
	 * Shared: this program's generation (its cfg_gen). It counts packets
	 * while the handover map holds it (bpf/maps.h), so that a replacement
	 * hands over in one map update.
	 */
	__u64 gen;
	__u32 key; /* enum xdp_rl_key_kind: --key */
	__u32 pad;
};

/* How the program runs on its interface (--attach; user/lib/dispatch.h). */
enum xdp_rl_attach {
	XDP_RL_ATTACH_AUTO,   /* shared where the kernel runs libxdp's dispatcher, else alone */
	XDP_RL_ATTACH_SHARED, /* through libxdp's dispatcher, beside other XDP programs */
	XDP_RL_ATTACH_ALONE,  /* attached alone, through a bpf_link */
};

/* libxdp's default run priority (its XDP_DEFAULT_RUN_PRIO), and the range --priority takes. */
#define XDP_RL_PRIORITY_DEFAULT 50
#define XDP_RL_PRIORITY_MAX	1000

/*
 * The one element of the config map. `set` publishes new settings without a
 * torn read: it first writes slot[!active] (the datapath does not look at
 * it), then, in a second update, flips `active`, a single byte that changes.
 */
struct xdp_rl_config {
	struct xdp_rl_live slot[2];
	struct xdp_rl_fixed fixed;
	__u32 active;
	/*
	 * The next limit set id to hand out (xdp_rl_hash): each rule added and
	 * each change of the global limits' shape takes a new one, so that no
	 * window is ever charged under two sets of limits.
	 */
	__u32 next_lsid;
};

/* ---- Rules (LPM tries, longest prefix wins) -------------------------------- */

struct xdp_rl_rule_key4 {
	__u32 prefixlen;
	__be32 addr;
};

struct xdp_rl_rule_key6 {
	__u32 prefixlen;
	__u32 addr[4];
};

enum xdp_rl_action {
	XDP_RL_RULE_LIMIT, /* its own layers, per source or shared */
	XDP_RL_RULE_ALLOW, /* never limited, still counted */
	XDP_RL_RULE_DENY,  /* always dropped */
};

#define XDP_RL_RULE_F_SHARED (1U << 0) /* one budget for the whole prefix */

struct xdp_rl_rule {
	struct xdp_rl_layer layer[XDP_RL_MAX_LAYERS];
	__u32 id;     /* index into rule_hits and shared */
	__u32 action; /* enum xdp_rl_action */
	__u32 nlayers;
	__u32 flags;	 /* XDP_RL_RULE_F_* */
	__u32 lsid;	 /* its limit set: the keys of its sources (per source) */
	__u32 prefixlen; /* its prefix's length, as its key has it */
	/*
	 * The packets of the prefix it applies to; the others are judged as if
	 * it did not exist: by the next shorter rule that matches (the
	 * datapath looks it up with a key one bit shorter than this rule's
	 * prefix), or the global limits if none does.
	 */
	struct xdp_rl_select select;
	__u64 ban_ns; /* --ban: a key over its limits is refused this long; 0: no ban */
};

/*
 * Rules with a selector nested in one another in a chain that a packet
 * missing every selector walks through (rules.c refuses more): with the
 * next rule the walk stops at, the datapath looks up at most this many
 * plus one rules per packet.
 */
#define XDP_RL_SELECT_NEST 3

/*
 * The allow and deny lists (`xdp-rl lists`, allow-list and deny-list in a
 * config file): block lists of up to XDP_RL_MAX_PREFIXES prefixes, where
 * rules stop at XDP_RL_MAX_RULES. A listed prefix is a plain --allow or
 * --deny rule without a selector that holds no more than its action: it
 * judges the packets of its prefix unless a rule of a longer prefix (or
 * the same) does. Both families and both lists are one LPM trie (IPv4 as
 * ::ffff:0:0/96, which no IPv6 packet carries: rules refuse it), the one
 * element of the `lists` map of maps: a new set of lists is built aside
 * and put in with one update, at once for every packet. Its matches are
 * counted as rule ids XDP_RL_LIST_ALLOW_ID and _DENY_ID in `rule_hits`.
 */
#define XDP_RL_MAX_PREFIXES  (1U << 24)
#define XDP_RL_LIST_ALLOW_ID XDP_RL_MAX_RULES
#define XDP_RL_LIST_DENY_ID  (XDP_RL_MAX_RULES + 1)
#define XDP_RL_RULE_HIT_IDS  (XDP_RL_MAX_RULES + 2)

/*
 * A listed prefix's value in the trie, a __u32: its action (XDP_RL_RULE_ALLOW
 * or _DENY) below, its length in its own family (0-32, 0-128) above.
 */
#define XDP_RL_LIST_ENTRY(action, len) ((__u32)(action) | (__u32)(len) << 16)
#define XDP_RL_LIST_ACTION(e)	       ((e)&0xffff)
#define XDP_RL_LIST_LEN(e)	       ((e) >> 16)

/*
 * What user space knows of the lists in force (`list_meta`, two slots): the
 * slot whose map_id is the trie's in `lists` describes it. A replacement
 * writes the other slot, then puts its trie in: a kill at any point leaves
 * a slot that describes the trie in force.
 */
#define XDP_RL_LIST_PATH 192

struct xdp_rl_list_meta {
	__u32 map_id; /* the trie it describes */
	__u32 pad;
	__u64 replaced_unix;
	__u64 prefixes[2][2];		/* [allow, deny][IPv4, IPv6] */
	__u64 hash[2];			/* of each list's prefixes, sorted (user/lists.c) */
	char path[2][XDP_RL_LIST_PATH]; /* the file each came from, "" if none */
};

/* Per-CPU, per rule id. */
struct xdp_rl_rule_hits {
	__u64 packets;	  /* matched the rule */
	__u64 dropped;	  /* of those, dropped */
	__u64 would_drop; /* ... or passed, by --dry-run, that it would have dropped */
};

/* The window state of one key: a window per layer. */
struct xdp_rl_layers {
	struct xdp_rl_state layer[XDP_RL_MAX_LAYERS];
};

/* ---- What user space asks of the program (bpf/admin.h) ---------------------- */

/*
 * The tables a key can live in (XDP_RL_TABLES: the order of the datapath's
 * cfg_buckets), and a --shared budget.
 */
/* clang-format off */
#define XDP_RL_TABLE_ENUM(id, name, v6) XDP_RL_T_##id,
enum xdp_rl_table {
	XDP_RL_TABLES(XDP_RL_TABLE_ENUM)
	XDP_RL_T_SHARED, /* also the number of tables */
};
#undef XDP_RL_TABLE_ENUM
/* clang-format on */

enum xdp_rl_admin_op {
	/*
	 * Start the windows of layers [from, to) of a key afresh: closed
	 * (count 0: the next packet opens them), or holding @count from now
	 * (`reset --count`, as Hammer's set). A key with no slot is given one
	 * when @count is not 0.
	 */
	XDP_RL_ADMIN_RESET,
	/*
	 * Charge @count to layers [from, to) of a key without a limit check,
	 * opening windows that are over (`charge`, as Hammer's inc); a key
	 * with no slot is given one.
	 */
	XDP_RL_ADMIN_CHARGE,
	/*
	 * Close the windows of layers [from, to) of every key in bucket @index;
	 * of an LRU table, of every key at once (@index unused).
	 */
	XDP_RL_ADMIN_CLOSE_BUCKET,
	/*
	 * LRU tables: set the fleet's share of layer @from of a key's window
	 * (its word in the key's element) to @count, a word as the `remote`
	 * map's (include/xdp_rl.h); 0 if the key has no element.
	 */
	XDP_RL_ADMIN_REMOTE,
};

/*
 * One request, sent as the frame of a BPF_PROG_TEST_RUN of the program's
 * `admin` entry point; the answer comes back in the frame's @result.
 */
struct xdp_rl_admin {
	__u32 op;	/* enum xdp_rl_admin_op */
	__u32 table;	/* enum xdp_rl_table */
	__u32 key[4];	/* as the datapath keys it; XDP_RL_T_SHARED: unused */
	__u32 lsid;	/* the key's limit set */
	__u32 index;	/* CLOSE_BUCKET: the bucket; XDP_RL_T_SHARED: the rule id */
	__u32 from, to; /* layers */
	__u64 count;
	__u64 window_ns[XDP_RL_MAX_LAYERS]; /* the layers' lengths (RESET with a count, CHARGE) */
	/*
	 * Out: 1 done (CLOSE_BUCKET: the live slots closed), 0 no such key, or
	 * an XDP_RL_ADMIN_E* below: nothing was changed (a change of several
	 * layers is taken back, or was of windows whose next change makes it
	 * again: asking again is safe).
	 */
	__s32 result;
	__u32 pad;
};

#define XDP_RL_ADMIN_EFAIL -1 /* a map the request needs is not there */
/* A window kept changing under traffic through every try: ask again. */
#define XDP_RL_ADMIN_EBUSY -2
/* CHARGE: the count would pass its ceiling (XDP_RL_COUNT_SAT): nothing charged. */
#define XDP_RL_ADMIN_ESATURATED -3
/* CHARGE or RESET to a count: the key could not be given a slot (the table is busy). */
#define XDP_RL_ADMIN_ENOSLOT -4

/* ---- Statistics (per-CPU array, one element) ----------------------------- */

/*
 * Every counter, in one list: X(ID, name, what it counts, metric). The
 * datapath counts XDP_RL_STAT_<ID>; `stats` shows it as <name>; `metrics`
 * exports it as xdp_rl_<metric>_total, where metric is "family" or
 * "family{label=\"value\"}": counters that share a family are the values of
 * its label (the family's HELP names each with what it counts).
 */
/* clang-format off */
#define XDP_RL_STATS(X)								\
	X(PASSED, passed, "admitted by the limit (or an allow rule)",		\
	  "packets{verdict=\"passed\"}")						\
	X(DROPPED, dropped, "over the limit, dropped",				\
	  "packets{verdict=\"dropped\"}")					\
	X(WOULD_DROP, would_drop, "over the limit or denied, passed: dry run",	\
	  "packets{verdict=\"would_drop\"}")					\
	X(NOT_IP, not_ip, "not IPv4/IPv6: passed",				\
	  "packets{verdict=\"not_ip\"}")					\
	X(MALFORMED, malformed, "bad Ethernet/VLAN/IP header, or tags past 2: dropped",		\
	  "packets{verdict=\"malformed\"}")					\
	X(NEW_WINDOWS, new_windows, "windows opened (first packet or turnover)", \
	  "windows_opened")							\
	X(TABLE_ERRORS, table_errors, "packets of a source no slot could be had for: passed", \
	  "table_errors")							\
	X(PASSED_BYTES, passed_bytes, "bytes of the frames passed",		\
	  "bytes{verdict=\"passed\"}")						\
	X(DROPPED_BYTES, dropped_bytes, "bytes of the frames dropped over the limit", \
	  "bytes{verdict=\"dropped\"}")						\
	X(INSERTS, inserts, "sources added to the table",			\
	  "table_inserts")							\
	X(REFUSED_INSERTS, refused_inserts, "new sources refused a slot by --new-sources", \
	  "new_sources_refused")						\
	X(AGGREGATED, aggregated, "new sources refused a slot, charged to their /24 or /48", \
	  "new_sources_aggregated")						\
	X(ALLOWED, allowed, "passed by an allow rule (counted in passed too)",	\
	  "allowed_packets")							\
	X(DENIED, denied, "dropped by a deny rule (in a dry run: passed, and counted in would_drop)", \
	  "packets{verdict=\"denied\"}")						\
	X(EVICTIONS, evictions, "inserts that took the slot of a source with an open window", \
	  "table_evictions")							\
	X(UNSELECTED, unselected, "selected by no limit or rule (--proto, --dport, --syn, link-local): passed", \
	  "packets{verdict=\"unselected\"}")					\
	X(OVER_LIMIT, over_limit, "windows that went over their limit (one packet each: events)", \
	  "over_limit")								\
	X(EVENTS_LOST, events_lost, "over-limit events the ring had no room for", \
	  "events_lost")							\
	X(DROPS_LIMIT, drops_limit, "dropped over a limit (a source's, an aggregate's, a shared budget's)", \
	  "drops{reason=\"limit\"}")						\
	X(DROPS_DENY, drops_deny, "dropped by a deny rule or the deny list",	\
	  "drops{reason=\"deny\"}")						\
	X(DROPS_MALFORMED, drops_malformed, "dropped as malformed",		\
	  "drops{reason=\"malformed\"}")						\
	X(DROPS_NEW_SOURCES, drops_new_sources, "new sources refused a slot, dropped (--on-table-full drop)", \
	  "drops{reason=\"new_sources\"}")						\
	X(BANS, bans, "keys banned (--ban): one per window that went over its limit", \
	  "bans")								\
	X(DROPS_BANNED, drops_banned, "dropped by a ban (--ban), in dropped too", \
	  "drops{reason=\"banned\"}")

/* ---- Over-limit events (bpf/events.h, xdp-rl events) ------------------- */

/* What went over its limit (struct xdp_rl_event's kind). */
enum xdp_rl_event_kind {
	XDP_RL_EV_SOURCE,      /* a source's window (its key: the masked address) */
	XDP_RL_EV_AGGREGATE,   /* a /24 or /48 of --on-table-full aggregate */
	XDP_RL_EV_SHARED,      /* a --shared rule's budget (key 0: the rule names it) */
	XDP_RL_EV_NEW_SOURCES, /* the --new-sources cap (key 0, family 0) */
};

/* A record's rule when the global limits applied. */
#define XDP_RL_EV_NO_RULE (~0U)

/*
 * One record of the `events` ring: the packet that took a window over its
 * limit, the one whose charge took the count from at most the limit to past
 * it (exactly one per window per layer). Written only while a reader holds
 * the lease (struct xdp_rl_ev_lease).
 */
struct xdp_rl_event {
	__u32 key[4];	 /* the key's address, network byte order (IPv4: key[0]) */
	__u64 time_ns;	 /* CLOCK_MONOTONIC_COARSE */
	__u64 limit;	 /* the layer's limit ... */
	__u64 window_ns; /* ... and window, when it went over */
	__u64 count;	 /* the window's count with this packet (packets, or bytes with --bytes) */
	__u32 rule;	 /* the rule whose limits these are, XDP_RL_EV_NO_RULE: the global ones */
	__u8 family;	 /* 4 or 6; 0: XDP_RL_EV_NEW_SOURCES */
	__u8 layer;
	__u8 kind;   /* enum xdp_rl_event_kind */
	__u8 banned; /* XDP_RL_EV_BANNED, XDP_RL_EV_RATE */
};

/* struct xdp_rl_event's flags (its `banned`). */
#define XDP_RL_EV_BANNED 1 /* the key was banned from then (--ban) */
#define XDP_RL_EV_RATE	 2 /* the layer is a rate (bpf/rate.h): its count is the burst */

/*
 * The `ev_lease` map's one element: records are written while
 * CLOCK_MONOTONIC_COARSE is before until_ns (0: no reader), which the one
 * reader (xdp-rl events, pid) moves on every second; a killed reader's
 * lease runs out by itself.
 */
struct xdp_rl_ev_lease {
	__u64 until_ns;
	__u32 pid;
	__u32 pad;
};

/* The `events` ring's size (a power of two of pages): 4 096 records. */
#define XDP_RL_EVENTS_RING (256 * 1024)

#define XDP_RL_STAT_ENUM(id, name, help, metric) XDP_RL_STAT_##id,
enum xdp_rl_stat {
	XDP_RL_STATS(XDP_RL_STAT_ENUM)
	XDP_RL_STAT_MAX,
};
#undef XDP_RL_STAT_ENUM

/*
 * The counters as an array (c[XDP_RL_STAT_ID], what the code indexes) and,
 * over the same words, one named member per counter, so that the map's BTF
 * (`bpftool map dump`) names each.
 */
#define XDP_RL_STAT_MEMBER(id, name, help, metric) __u64 name;
struct xdp_rl_stats {
	union {
		__u64 c[XDP_RL_STAT_MAX];
		struct {
			XDP_RL_STATS(XDP_RL_STAT_MEMBER)
		};
	};
};
#undef XDP_RL_STAT_MEMBER
/* clang-format on */

/* ---- Capture (xdp-rl capture; bpf/capture.h) ------------------------------ */

/*
 * Why a packet got its verdict, as `capture` writes it (the comment of its
 * packet block) and filters by it (a mask of 1 << reason). A dry run
 * passes what it would drop: the reason stays, the action is XDP_PASS.
 */
enum xdp_rl_cap_reason {
	XDP_RL_CAP_DROPPED,    /* over the limit */
	XDP_RL_CAP_DENIED,     /* a deny rule or the deny list */
	XDP_RL_CAP_FULL,       /* a new source refused a slot (--on-table-full drop) */
	XDP_RL_CAP_MALFORMED,  /* bad Ethernet/VLAN/IP header */
	XDP_RL_CAP_PASSED,     /* within the limit */
	XDP_RL_CAP_ALLOWED,    /* an allow rule or the allow list */
	XDP_RL_CAP_UNSELECTED, /* selected by no limit or rule */
	XDP_RL_CAP_NOT_IP,     /* not IPv4/IPv6 */
	XDP_RL_CAP_BANNED,     /* the key is under a ban (--ban) */
	XDP_RL_CAP_REASONS,
};

/*
 * The largest snap length: a frame's copy and its record fill one per-CPU
 * value (the kernel's limit for one is 32 KiB).
 */
#define XDP_RL_CAP_RECORD_MAX 32768
/* The ring the frames go to (`cap_ring`), for every CPU. */
#define XDP_RL_CAP_RING_BYTES (4U << 20)

/*
 * The one element of the `capture` map (mmapable): the capture running,
 * if any. The datapath reads until_ns on every packet, and the rest only
 * while now (CLOCK_MONOTONIC_COARSE) is before it: 0, or a lease past,
 * is no capture. The capture process writes the filters first, then
 * until_ns, and renews the lease while it runs; killed, the lease runs out.
 */
struct xdp_rl_capture {
	__u64 until_ns;	   /* the lease, on CLOCK_MONOTONIC_COARSE */
	__u32 gen;	   /* this capture's number: its records carry it */
	__u32 reasons;	   /* 1 << enum xdp_rl_cap_reason: the verdicts written */
	__u32 sample;	   /* one packet in @sample per CPU, after the filters (0, 1: all) */
	__u32 snaplen;	   /* bytes of each frame written, at most */
	__u32 src_family;  /* 0 any source; 4 or 6: the source's masked address is src_addr */
	__u32 src_len;	   /* the --src prefix's length */
	__u32 src_addr[4]; /* network byte order, masked */
	__u32 src_mask[4]; /* network byte order */
	/* The capture process's, never read by the datapath (status, the next capture): */
	__u64 pid, pid_start; /* its pid and start time (lib/proc.h) */
	__u64 started_unix;
};

/*
 * The `cap_cpu` map: per CPU, what the capture running saw (zeroed by it
 * when it starts). Packets judged with capture on: checked; of those, taken
 * by the filters: matched; of those, not sampled out: sent to the ring, or
 * failed (the ring full). skip: left to sample out; copied: the gen of the
 * capture the frame in cap_buf was copied for (0: none), whose verdict is
 * what moved the counters since snap (xdp_rl_cap_judged).
 */
struct xdp_rl_cap_cpu {
	__u64 checked, matched, sent, failed;
	__u32 skip, copied;
	__u64 snap[XDP_RL_STAT_MAX]; /* this CPU's counters when the frame copied began */
};

/* What precedes each frame in a `cap_ring` record. */
struct xdp_rl_cap_meta {
	__u64 ts_ns;   /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 gen;     /* the capture's (struct xdp_rl_capture) */
	__u32 pkt_len; /* the frame's length */
	__u32 cap_len; /* bytes of it that follow */
	__u32 rule;    /* the rule id that judged it, XDP_RL_LIST_*_ID, or ~0 */
	__u8 reason;   /* enum xdp_rl_cap_reason */
	__u8 action;   /* XDP_PASS or XDP_DROP */
	__u8 dry_run;  /* 1: a dry run passed what it would drop */
	__u8 pad[3];
	__u16 cpu;
};

/* A record: the frame's first cap_len bytes after its meta (`cap_buf`, then the ring). */
#define XDP_RL_CAP_SNAPLEN_MAX (XDP_RL_CAP_RECORD_MAX - sizeof(struct xdp_rl_cap_meta))
struct xdp_rl_cap_record {
	struct xdp_rl_cap_meta meta;
	__u8 data[XDP_RL_CAP_SNAPLEN_MAX];
};

/*
 * The verdict of the one packet a CPU judged between two readings of its
 * counters, @then and @now (XDP_RL_STATS): enum xdp_rl_cap_reason, or
 * XDP_RL_CAP_REASONS if it moved none (another program's turn). *@action:
 * XDP_PASS or XDP_DROP; *@dry: 1 if a dry run (@dry_run) passed a drop.
 * Of a new source refused a slot and dropped, the refusal is counted too
 * (refused_inserts, or table_errors when no slot could be had), unless it
 * was aggregated and its /24's or /48's window was over.
 */
static inline __u32 xdp_rl_cap_judged(const __u64 *now, const __u64 *then, __u32 dry_run,
				      __u32 *action, __u32 *dry)
{
#define XDP_RL_MOVED(id) (now[XDP_RL_STAT_##id] != then[XDP_RL_STAT_##id])
	int full = (XDP_RL_MOVED(REFUSED_INSERTS) || XDP_RL_MOVED(TABLE_ERRORS)) &&
		   !XDP_RL_MOVED(AGGREGATED);

	*action = XDP_PASS;
	*dry = 0;
	if (XDP_RL_MOVED(NOT_IP))
		return XDP_RL_CAP_NOT_IP;
	if (XDP_RL_MOVED(UNSELECTED))
		return XDP_RL_CAP_UNSELECTED;
	if (XDP_RL_MOVED(ALLOWED))
		return XDP_RL_CAP_ALLOWED;
	if (XDP_RL_MOVED(PASSED))
		return XDP_RL_CAP_PASSED;
	if (XDP_RL_MOVED(WOULD_DROP)) {
		*dry = 1;
		return XDP_RL_MOVED(DENIED) ? XDP_RL_CAP_DENIED :
		       full		    ? XDP_RL_CAP_FULL :
					      XDP_RL_CAP_DROPPED;
	}
	if (XDP_RL_MOVED(MALFORMED)) {
		*action = dry_run ? XDP_PASS : XDP_DROP;
		*dry = !!dry_run;
		return XDP_RL_CAP_MALFORMED;
	}
	if (XDP_RL_MOVED(DENIED)) {
		*action = XDP_DROP;
		return XDP_RL_CAP_DENIED;
	}
	if (XDP_RL_MOVED(DROPS_BANNED)) {
		*action = XDP_DROP;
		return XDP_RL_CAP_BANNED;
	}
	if (XDP_RL_MOVED(DROPPED)) {
		*action = XDP_DROP;
		return full ? XDP_RL_CAP_FULL : XDP_RL_CAP_DROPPED;
	}
	return XDP_RL_CAP_REASONS;
#undef XDP_RL_MOVED
}

/*
 * The IP source of the frame whose first @len bytes are @f (Ethernet, up
 * to XDP_RL_MAX_VLAN_DEPTH tags): its family, 4 (the address in a[0]) or
 * 6, or 0 if none could be read.
 */
static inline __u32 xdp_rl_cap_source(const __u8 *f, __u32 len, __u32 *a)
{
	__u32 off = 12, i;
	__u16 proto;

	if (len < 14)
		return 0;
	proto = (__u16)(f[12] << 8 | f[13]);
	for (i = 0; i < XDP_RL_MAX_VLAN_DEPTH; i++) {
		if (proto != 0x8100 && proto != 0x88a8)
			break;
		off += 4;
		if (len < off + 2)
			return 0;
		proto = (__u16)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (off > 12 + 4 * XDP_RL_MAX_VLAN_DEPTH + 2)
		return 0;
	if (proto == 0x0800 && len >= off + 20) {
		__builtin_memcpy(a, f + off + 12, 4);
		return 4;
	}
	if (proto == 0x86dd && len >= off + 40) {
		__builtin_memcpy(a, f + off + 8, 16);
		return 6;
	}
	return 0;
}

#endif /* XDP_RL_H */
