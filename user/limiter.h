/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * limiter.h - a running limiter: the objects it pins in its folder (the
 * link and the maps of include/xdp_rl.h's XDP_RL_MAPS), opened by later
 * commands, and its settings published without a torn read.
 */
#ifndef XDP_RL_LIMITER_H
#define XDP_RL_LIMITER_H

#include <limits.h>
#include <net/if.h>
#include "xdp_rl.h"
#include "mtable.h"

/* Everything a limiter pins in its folder: the link, then every map. */
#define PIN_MAP_ENUM(id, name, kind) PIN_##id,
enum pin_id {
	PIN_LINK,
	XDP_RL_MAPS(PIN_MAP_ENUM)
	PIN_MAX,
};
#undef PIN_MAP_ENUM
#define PIN_FIRST_MAP (PIN_LINK + 1)

/* The pin name of each (a map's is its name in the program). */
extern const char *const pin_names[PIN_MAX];
/* What a replacement does with each map (enum xdp_rl_map_kind). */
extern const int pin_kinds[PIN_MAX];

struct limiter {
	char dir[PATH_MAX];
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	int fd[PIN_MAX];
	struct xdp_rl_config cfg; /* as read when opened */
};

/* Resolve @name in the current netns; prints "<what> '<name>': ..." on error. */
int iface_resolve(const char *name, unsigned int *ifindex, const char *what);

/* Open the limiter on @ifname; prints an error naming @what on failure. */
int limiter_open(const char *ifname, struct limiter *l, const char *what);
int limiter_open_index(unsigned int ifindex, const char *ifname, struct limiter *l,
		       const char *what);
void limiter_close(struct limiter *l);
/* Whether the limiter pinned for @ifindex is this namespace's (see netns_cookie). */
int limiter_here(unsigned int ifindex);
/* Whether the maps @l holds are still the ones pinned (not unloaded or replaced). */
int limiter_pinned(const struct limiter *l);
int limiter_read_config(struct limiter *l);
/* Publish new live settings without a torn read (see struct xdp_rl_config). */
int limiter_publish(struct limiter *l, const struct xdp_rl_live *live);
/* The live settings in force. */
const struct xdp_rl_live *limiter_live(const struct limiter *l);

/*
 * Map the source table pinned as @id (PIN_SRC4, PIN_SRC6, PIN_AGG4 or
 * PIN_AGG6) of @l. Prints an error naming @what on failure.
 */
int limiter_table(const struct limiter *l, int id, struct mtable *t, const char *what);
/* Whether the table pinned as @id holds IPv6 keys. */
int pin_is_v6(int id);

/* Pin paths. */
void pin_path(char *out, size_t len, const char *dir, const char *name);
int pin_open(const char *dir, const char *name);
/* Pin the map fds @fd (PIN_* indexed) in @dir that are not already pinned there. */
int pins_add_maps(const int *fd, const char *dir);
/* Remove every pin in @dir and the folder itself (and its netns folder if empty). */
int pins_remove(const char *dir);
/* Forget limiters whose interface is gone (their link was detached). */
void pins_gc(void);
/*
 * The folder of the limiter last loaded on the interface named @ifname in
 * this namespace, found by that name (its interface may be gone): 0 and
 * its path in @dir, or -1.
 */
int limiter_find_by_name(const char *ifname, char *dir, size_t len);

#endif
