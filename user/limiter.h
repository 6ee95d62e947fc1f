/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * limiter.h - a running limiter: the objects it pins in its folder (the
 * link, the program and the maps of include/xdp_rl.h's XDP_RL_MAPS),
 * opened by later commands; its settings, published without a torn read;
 * and changes to it that a crash cannot leave half done (limiter.c has the
 * protocol).
 */
#ifndef XDP_RL_LIMITER_H
#define XDP_RL_LIMITER_H

#include <limits.h>
#include <net/if.h>
#include "xdp_rl.h"
#include "mtable.h"

/*
 * Everything a limiter pins in its folder: the link, the program, its admin
 * entry point (bpf/admin.h), then every map.
 */
/* clang-format off */
#define PIN_MAP_ENUM(id, name, kind) PIN_##id,
enum pin_id {
	PIN_LINK,
	PIN_PROG,
	PIN_ADMIN,
	XDP_RL_MAPS(PIN_MAP_ENUM)
	PIN_MAX,
};
#undef PIN_MAP_ENUM
/* clang-format on */
#define PIN_FIRST_MAP (PIN_ADMIN + 1)

/* The pin name of each (a map's is its name in the program). */
extern const char *const pin_names[PIN_MAX];
/* What a replacement does with each map (enum xdp_rl_map_kind). */
extern const int pin_kinds[PIN_MAX];
/* The pin of each source table, by enum xdp_rl_table (XDP_RL_TABLES). */
extern const int pin_tables[XDP_RL_T_SHARED];

struct limiter {
	char dir[PATH_MAX];
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	int fd[PIN_MAX];
	struct xdp_rl_config cfg; /* as read when opened */
};

/* Resolve @name in the current netns; prints "<what> '<name>': ..." on error. */
int iface_resolve(const char *name, unsigned int *ifindex, const char *what);

/*
 * Finish or undo whatever a command that was killed left half done in this
 * namespace's pinned folders, and with @gc remove the limiters whose
 * interface is gone (load and unload do; status shows them DETACHED until
 * then), here and in the folders of other namespaces that no command holds
 * at that moment. Nothing of another namespace is waited on, finished or
 * undone. This namespace's lock is held (lock.h: lock_take runs this).
 */
void limiter_recover(int gc);

/*
 * Open the limiter on @ifname (attached to it now); prints an error naming
 * @what on failure.
 */
int limiter_open(const char *ifname, struct limiter *l, const char *what);
/* The limiter pinned for @ifindex, attached or not (status shows both). */
int limiter_open_index(unsigned int ifindex, const char *ifname, struct limiter *l,
		       const char *what);
void limiter_close(struct limiter *l);
/* Whether the limiter pinned for @ifindex is this namespace's (see netns_cookie). */
int limiter_here(unsigned int ifindex);
/*
 * What runs the limiter pinned in @dir: its program's id and its interface
 * (0: detached), through its link, or (shared) in libxdp's dispatcher of
 * this namespace's interface while it holds the handover. -1 if unknown (a
 * shared limiter of another namespace).
 */
int limiter_attach_state(const char *dir, __u32 *prog_id, __u32 *ifindex);
/* Whether the maps @l holds are still the ones pinned (not unloaded or replaced). */
int limiter_pinned(const struct limiter *l);
int limiter_read_config(struct limiter *l);
/*
 * Publish new live settings to a running limiter without a torn read: the
 * settings go to the slot of struct xdp_rl_config the datapath is not
 * reading, then one byte flips. Before the write, a grace period makes sure
 * no packet still reads that slot from before the last flip; after the
 * flip, another makes sure none reads the old settings when this returns.
 */
int limiter_publish(struct limiter *l, const struct xdp_rl_live *live);
/* The first settings of a limiter no program runs yet (no grace periods). */
int limiter_publish_new(struct limiter *l, const struct xdp_rl_live *live);
/* The live settings in force. */
const struct xdp_rl_live *limiter_live(const struct limiter *l);
/* Wait until every XDP program that was running when called has returned. */
int sync_programs(void);

/*
 * Map the source table pinned as @id (PIN_SRC4, PIN_SRC6, PIN_AGG4 or
 * PIN_AGG6) of @l. Prints an error naming @what on failure.
 */
int limiter_table(const struct limiter *l, int id, struct mtable *t, const char *what);
/* Whether the table pinned as @id holds IPv6 keys. */
int pin_is_v6(int id);
/* The program's name for the table pinned as @id (enum xdp_rl_table). */
int pin_table(int id);

/* Pin paths. */
void pin_path(char *out, size_t len, const char *dir, const char *name);
int pin_open(const char *dir, const char *name);
/* The id of the object pinned as @name in @dir; 0 if none. */
__u32 pinned_id(const char *dir, const char *name);
/* Remove every pin in @dir and the folder itself (and its netns folder if empty). */
int pins_remove(const char *dir);
/*
 * The folder of the limiter last loaded on the interface named @ifname in
 * this namespace, found by that name (its interface may be gone): 0 and
 * its path in @dir, or -1.
 */
int limiter_find_by_name(const char *ifname, char *dir, size_t len);

/*
 * A load or a replacement, built aside in <ifindex>-new and switched in
 * (limiter.c has the protocol). @fd holds every object to pin, PIN_*
 * indexed (PIN_LINK: the link to keep, for a replacement; -1 for a load,
 * which attaches in stage_attach).
 */
struct stage {
	char dir[PATH_MAX];  /* <ns>/<ifindex>-new */
	char main[PATH_MAX]; /* <ns>/<ifindex> */
	int made;	     /* this command made dir (so may remove it) */
};

/* Make the folder of a change for the limiter on @ifindex of this namespace. */
int stage_begin(struct stage *st, unsigned int ifindex);
/* Pin @fd's maps and program (and link, if any) in it. */
int stage_pin(struct stage *st, const int *fd);
/* A load: attach @prog_fd to @ifindex in @mode and pin the link: the commit. */
int stage_attach(struct stage *st, int prog_fd, unsigned int ifindex, __u32 mode, int *err);
/* A replacement: run @prog_fd under @link_fd: the commit. */
int stage_swap(struct stage *st, int link_fd, int prog_fd);
/*
 * Shared (through libxdp's dispatcher): pin @prog_fd, attached there and
 * passing packets on, in the stage, then write @gen, its generation, to
 * the handover map @handover_fd: the commit.
 */
int stage_handover(struct stage *st, int prog_fd, int handover_fd, __u64 gen);
/* After the commit: the staged folder becomes the limiter's, the old one goes. */
int stage_finish(struct stage *st);
/* Before the commit, on failure: remove what this command staged. */
void stage_abort(struct stage *st);

/*
 * Take off the dispatcher on @ifindex (this namespace's) every program of
 * xdp-rl's but @keep and @keep2: what a killed load left there.
 */
/* The id of the BPF object @fd refers to (map, program or link); 0 if none. */
__u32 obj_id(int fd);
void limiter_orphans_remove(unsigned int ifindex, __u32 keep, __u32 keep2);

/* Unload: the limiter's folder is renamed away (the commit), its link detached, its pins removed. */
int limiter_remove(struct limiter *l);

#endif
