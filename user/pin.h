/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pin.h - where a running limiter lives and how later commands find it.
 *
 * A limiter's link and maps are pinned in
 *   <bpffs>/xdp-rl/<netns inode>/<ifindex>/
 * in the bpffs of the initial mount namespace, so that `xdp-rl -n NS ...`
 * and `ip netns exec NS xdp-rl ...` (which hides /sys/fs/bpf) find the same
 * state, and it outlives the command that made it.
 */
#ifndef XDP_RL_PIN_H
#define XDP_RL_PIN_H

#include <limits.h>
#include <net/if.h>
#include "xdp_rl.h"
#include "table.h"

/* Everything a limiter pins, in its folder, by these names. */
enum pin_id {
	PIN_LINK, PIN_CONFIG, PIN_STATS, PIN_SRC4, PIN_SRC6, PIN_RULES4,
	PIN_RULES6, PIN_RULE_HITS, PIN_SHARED, PIN_AGG4, PIN_AGG6, PIN_NEWSRC,
	PIN_LOCKS, PIN_MAX,
};

extern const char *const pin_names[PIN_MAX];

struct limiter {
	char dir[PATH_MAX];
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	int fd[PIN_MAX];
	struct xdp_rl_config cfg;	/* as read when opened */
};

/* -n NETNS: enter /run/netns/NETNS, as `ip -n` does. */
int netns_enter(const char *name);
/* This network namespace's cookie (SO_NETNS_COOKIE), 0 if the kernel has none. */
__u64 netns_cookie(void);

/* The limiters' folder for this netns; with @create, make it (and bpffs). */
int state_dir(char *out, size_t len, int create);
/* Hold the lock that serialises changes to pinned state; returns an fd. */
int state_lock(void);

/* Resolve @name in the current netns; prints "cannot <what> ..." on error. */
int iface_resolve(const char *name, unsigned int *ifindex, const char *what);

/* Open the limiter on @ifname; prints an error naming @what on failure. */
int limiter_open(const char *ifname, struct limiter *l, const char *what);
int limiter_open_index(unsigned int ifindex, const char *ifname,
		       struct limiter *l, const char *what);
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
int limiter_table(const struct limiter *l, int id, struct table *t, const char *what);

/* Pin paths. */
void pin_path(char *out, size_t len, const char *dir, const char *name);
int pin_open(const char *dir, const char *name);
/* Remove every pin in @dir and the folder itself (and its netns folder if empty). */
int pins_remove(const char *dir);
/* Forget limiters whose interface is gone (their link was detached). */
void pins_gc(void);

#endif
