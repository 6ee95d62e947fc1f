/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * fleet.h - a limiter's windows shared with a fleet through Redis (`xdp-rl
 * fleet`, include/xdp_rl.h "A fleet's share of a window"), as a model.
 *
 * Every round the agent scans the limiter's windows (sources, aggregates,
 * --shared budgets: a bucket table in place, an LRU table through the
 * kernel, in batches), picks the ones worth syncing (a count of
 * at least --sync-above of the limit, or already synced in this window;
 * the heaviest --max-synced of them), and for each sends one pipelined
 * command to Redis: INCRBY of what it counted since its last push (with
 * EXPIRE the first time), or GET when it counted nothing new. The reply is
 * the fleet's total in that window; the total less what this server pushed
 * is the others' part, written with the window's generation into the
 * window's word of `remote`, after checking that the slot still holds the
 * same key in the same window (an LRU table: into the word in the key's
 * element, by the program, bpf/admin.h).
 *
 * The book keeps, per window synced, what this server has pushed into its
 * key. It is a sorted array, merged with the scan (which walks the windows
 * in the same order), so the scan costs no lookup; an LRU table's elements
 * come in the kernel's order and are looked up in it.
 *
 * The keys (doc/fleet.md, "Keys and values"):
 *   xdp-rl:GROUP:SCOPE:DUR:WHO:NUMBER
 * SCOPE: "all" (the global limits), "rule=PREFIX" (a per-source rule's
 * limits) or "shared" (a --shared rule's budget); DUR: the window's length
 * (1s, 500ms, 15m); WHO: the source key (198.51.100.7/32, 2001:db8::/64),
 * "agg=PREFIX" for a /24 or /48 aggregate, or the rule's prefix for a
 * --shared budget; NUMBER: floor(Unix time of the window's start / DUR).
 */
#ifndef XDP_RL_FLEET_H
#define XDP_RL_FLEET_H

#include <stddef.h>
#include "xdp_rl.h"
#include "limiter.h"
#include "mtable.h"
#include "redis.h"
#include "sources.h"

#define FLEET_SYNC_DEFAULT_NS	 (100ULL * 1000000) /* --sync */
#define FLEET_SYNC_MIN_NS	 (10ULL * 1000000)
#define FLEET_SYNC_MAX_NS	 (10ULL * 1000000000)
#define FLEET_ABOVE_DEFAULT_PPM	 100000 /* --sync-above 0.1 */
#define FLEET_MAX_SYNCED_DEFAULT 4096	/* --max-synced */
#define FLEET_MAX_SYNCED_MAX	 1000000
#define FLEET_GROUP_DEFAULT	 "default"
#define FLEET_GROUP_MAX		 63
/* A key outlives its window by this much (seed 003's margin). */
#define FLEET_TTL_MARGIN_S 10
/* The book holds at most this many windows per --max-synced. */
#define FLEET_BOOK_PER_SYNCED 16

/* A limit set as the fleet names it: the global limits, or a rule's. */
struct fleet_set {
	struct limit_set ls; /* sources.h */
	char scope[64];	     /* "all", "rule=PREFIX", "shared" */
	char who[64];	     /* a --shared rule's prefix */
};

/*
 * One window synced in its current generation: what this server pushed
 * into its key. A key of Redis is one window number of one source (or
 * budget): a window restarted within it (a reset, an eviction and a new
 * slot, an LRU element made anew) is another generation, with an entry of
 * its own, which takes over what this server already pushed into the key
 * (own; struct fleet's gone), so that it is never counted as the others'.
 */
struct fleet_entry {
	__u64 id;  /* fleet_id(): the table, slot (or rule id) and layer */
	__u64 tag; /* the slot's tag (0 for a --shared budget; an LRU element's: its lsid) */
	__u32 k[4];
	__u64 gen;
	__u64 window_ns, number; /* the key's window: its length and number */
	__u64 ident;		 /* fleet_ident() of the key, for gone */
	__u64 pushed;		 /* this generation's count added to the key, as Redis confirmed */
	__u64 own;		 /* all this server added to the key, any generation's */
	__u64 remote;		 /* the others' part (the key's total less own), as last read */
	__u64 written; /* LRU: the others' part this entry last wrote, + 1 (0: none yet) */
	__u64 weight;  /* the count's share of the limit, for fleet_book_trim */
	__u32 expire;  /* the key's TTL is set (EXPIRE answered 1) */
	__u32 mark;    /* the round that last found the window open */
	__u32 epoch;   /* struct fleet's epoch when it was made */
};

/* A window the scan found worth syncing this round. */
struct fleet_cand {
	__u64 weight; /* count / limit, in 2^-20 */
	__u64 id, tag, gen, count, limit, window_ns, number;
	__u32 k[4];
	__u32 set;  /* in fleet.sets */
	long entry; /* in the book, or -1 */
};

/* One command of a round's pipeline. */
enum fleet_op { FLEET_INCRBY, FLEET_GET, FLEET_EXPIRE };

struct fleet_job {
	size_t entry; /* in the book */
	__u64 delta;  /* FLEET_INCRBY: what it adds */
	enum fleet_op op;
};

struct fleet {
	/* Settings. */
	char group[FLEET_GROUP_MAX + 1];
	__u32 above_ppm;  /* --sync-above, in millionths */
	__u32 max_synced; /* --max-synced */

	/* The limiter's windows and its `remote` words (fleet_attach). */
	struct mtable t[4]; /* enum xdp_rl_table's tables */
	__u64 base[XDP_RL_T_SHARED + 1];
	__u64 *remote;
	__u64 nwords;
	size_t remote_len; /* mapped bytes; 0 if not mapped by fleet_attach */
	__u32 v4_prefix, v6_prefix, link_local;
	__u32 key; /* enum xdp_rl_key_kind: --key */
	__s64 tai_to_unix_ns;
	struct fleet_set *sets; /* by lsid */
	size_t nsets;
	/* A --shared rule's windows (bpf_map_lookup_elem on `shared`): 0, or -1. */
	int (*read_shared)(void *ctx, __u32 rule_id, struct xdp_rl_layers *w);
	/*
	 * An LRU table's fleet word (in the key's element, written by the
	 * program: admin_remote) of layer @layer of key @k under limit set
	 * @lsid in table @t: 0, or -1.
	 */
	int (*write_lru)(void *ctx, __u32 t, const __u32 k[4], __u32 lsid, __u32 layer, __u64 word);
	void *shared_ctx; /* both's */
	/* How an LRU table's elements are walked: NULL, mt_foreach (a test gives its own). */
	int (*foreach_lru)(const struct mtable *t, mt_fn fn, void *ctx);

	/* The book, sorted by id. */
	struct fleet_entry *book;
	size_t nbook, capbook;
	__u32 round;
	/*
	 * Entries whose window left the book (its generation ended, its slot
	 * went to another key, the book was trimmed or the limiter replaced)
	 * after this server pushed into its key: a new entry of the same key
	 * and window number takes their own (and pushed, if the generation is
	 * the same), by ident. At most FLEET_BOOK_PER_SYNCED * --max-synced,
	 * the oldest forgotten first (mark: the round each left).
	 */
	struct fleet_entry *gone;
	size_t ngone, capgone;
	__u32 epoch; /* limiters synced so far, less one (fleet_retire_book) */

	/* This round. */
	struct fleet_cand *heap; /* the heaviest, a min-heap by weight */
	size_t nheap;
	struct fleet_job *jobs;
	size_t njobs, capjobs;
	__u64 left_out;	     /* candidates past the cap, this round */
	__u64 synced;	     /* windows with a command this round */
	__u64 reply_errors;  /* replies that were Redis errors, this round */
	char reply_why[128]; /* the last of them */
};

/*
 * A window's place: table (enum xdp_rl_table), slot index, rule id or (an
 * LRU table) fleet_lru_place, layer.
 */
#define FLEET_PLACE_MASK 0xfffffffffULL /* 36 bits */
static inline __u64 fleet_id(__u32 table, __u64 index, __u32 layer)
{
	return ((__u64)table << 40) | ((index & FLEET_PLACE_MASK) << 4) | layer;
}

/*
 * The place of key @k under limit set @lsid in an LRU table, whose elements
 * have no index of their own: 36 bits of a hash of both. Two keys may share
 * one; the book tells them apart by key (an entry's tag is its limit set).
 */
__u64 fleet_lru_place(const __u32 k[4], __u32 lsid);

/* ---- the pure parts (no limiter, no Redis: the unit tests call them) ---------- */

/* Settings and empty state; @group is checked by fleet_group_ok. */
void fleet_init(struct fleet *f, const char *group, __u32 above_ppm, __u32 max_synced);
void fleet_free(struct fleet *f);

/* NULL if @g may name a group (1-63 of A-Z a-z 0-9 . _ -), else why not. */
const char *fleet_group_ok(const char *g);
/* --sync-above: a fraction from 0 to 1 ("0.1", "0.05") or a percentage ("10%"), in millionths. */
const char *fleet_parse_fraction(const char *s, __u32 *ppm);

/* The window number of an aligned window that starts at @start_ns (CLOCK_TAI). */
__u64 fleet_window_number(__u64 start_ns, __s64 tai_to_unix_ns, __u64 window_ns);
/* The smallest count that is at least @ppm millionths of @limit (at least 1). */
__u64 fleet_threshold(__u64 limit, __u32 ppm);
/* The key of a window: xdp-rl:GROUP:SCOPE:DUR:WHO:NUMBER. Its length, or -1 if it does not fit. */
int fleet_key(char *buf, size_t len, const char *group, const char *scope, __u64 window_ns,
	      const char *who, __u64 number);
/* WHO for the key @k (IPv4 in k[0]) of table @t under the fleet's prefixes. */
void fleet_who(const struct fleet *f, __u32 t, const __u32 k[4], char *buf, size_t len);
/* The TTL of a key of a window of @window_ns: the window, rounded up to seconds, and the margin. */
__u64 fleet_ttl_s(__u64 window_ns);

/* Add candidate @c to the round's heaviest (at most f->max_synced). */
void fleet_consider(struct fleet *f, const struct fleet_cand *c);

/*
 * A round's first half, at @now (CLOCK_TAI): scan the windows, pick those
 * to sync, and queue their commands on @r. Returns the commands queued (0:
 * nothing to sync), or -1 (out of memory).
 */
long fleet_plan(struct fleet *f, __u64 now, struct redis *r);
/* Its second half: reply @i of the pipeline (redis_reply_fn). */
int fleet_reply(const struct resp_reply *rep, size_t i, void *ctx);
/* The replies did not all come: what was sent is taken as not pushed (it is sent again). */
void fleet_abort(struct fleet *f);
/*
 * Whether limiter @l would drop what Redis sends the agent on the
 * connected socket @fd: its replies come back on the limiter's interface
 * (the route to Redis leaves by it) and a limit takes them (TCP, to the
 * socket's port, not a SYN), or a rule or the deny list denies them. The
 * agent would then throttle itself, its rounds falling behind. 1, with
 * what takes them and the fix in @why; 0 if nothing would drop them (dry
 * run included); -1 if it cannot be told (why in @why).
 */
int fleet_own_traffic(const struct limiter *l, int fd, char *why, size_t len);

/*
 * The limiter was replaced: its places may hold other keys. Every entry
 * leaves the book for gone, so that a window the new limiter still has
 * (load --force keeps them) takes over what was pushed for it.
 */
void fleet_retire_book(struct fleet *f);

/* ---- the limiter's side ------------------------------------------------------------ */

/*
 * Map @l's tables and `remote` words and read its limit sets, for rounds
 * on it; again after the limiter was replaced, or its rules changed. 0, or
 * -1 after saying why.
 */
int fleet_attach(struct fleet *f, const struct limiter *l);
void fleet_detach(struct fleet *f);
/* Read the limit sets again (the global limits', and each rule's): 0, or -1. */
int fleet_load_sets(struct fleet *f, const struct limiter *l);

/* The `fleet` map's element, mapped for the agent to write: NULL after saying why. */
struct xdp_rl_fleet *fleet_status_map(const struct limiter *l);
void fleet_status_unmap(struct xdp_rl_fleet *st);
/* A copy of it, for `stats`: 0, or -1 with errno. */
int fleet_status_read(const struct limiter *l, struct xdp_rl_fleet *st);
/* Whether the agent @st names is still running. */
int fleet_agent_alive(const struct xdp_rl_fleet *st);
/*
 * The pid of a fleet agent running on @l (it shares its windows), 0 if
 * none: a rate (--rate) is refused while one runs, as the fleet shares
 * windows only.
 */
__u64 fleet_running(const struct limiter *l);
/* What set, rule add and apply say of a rate refused because agent @pid runs. */
#define FLEET_RATE_HINT                                                                       \
	"a fleet agent (pid %llu) shares its windows, and a rate is local: the fleet shares " \
	"windows only (stop the agent first, or keep windows)"

/* The names, help and metrics of struct xdp_rl_fleet's counters (XDP_RL_FLEET_STATS). */
extern const char *const fleet_stat_names[XDP_RL_FLEET_STAT_MAX];
extern const char *const fleet_stat_help[XDP_RL_FLEET_STAT_MAX];
extern const char *const fleet_stat_metrics[XDP_RL_FLEET_STAT_MAX];
/* "stopped", "syncing", "retrying", "paused" (enum xdp_rl_fleet_state). */
const char *fleet_state_name(__u64 state);

#endif
