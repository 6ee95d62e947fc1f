/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpffs.h - where xdp-rl's state lives on the host: the bpffs, the folder
 * per network namespace, the lock that serialises changes, and entering a
 * namespace (-n).
 *
 * A limiter's link and maps are pinned in
 *   <bpffs>/xdp-rl/<netns inode>/<ifindex>/
 * in the bpffs of the initial mount namespace, so that `xdp-rl -n NS ...`
 * and `ip netns exec NS xdp-rl ...` (which hides /sys/fs/bpf) find the same
 * state, and it outlives the command that made it.
 */
#ifndef XDP_RL_BPFFS_H
#define XDP_RL_BPFFS_H

#include <stddef.h>
#include <linux/types.h>

/* -n NETNS: enter /run/netns/NETNS, as `ip -n` does. */
int netns_enter(const char *name);
/* This network namespace's cookie (SO_NETNS_COOKIE), 0 if the kernel has none. */
__u64 netns_cookie(void);

/* The folder of every namespace's limiters; with @create, make it (and bpffs). */
int root_dir(char *out, size_t len, int create);
/* The limiters' folder for this netns; with @create, make it (and bpffs). */
int state_dir(char *out, size_t len, int create);
/*
 * Take the lock that serialises changes to pinned state: an fd, held until
 * the process exits or closes it. Waits (saying who holds it after a
 * second) up to XDP_RL_LOCK_WAIT seconds, 30 by default; with @nowait,
 * fails at once with errno EWOULDBLOCK, saying nothing.
 */
int state_lock(int nowait);

/*
 * A folder of xdp-rl's state outside bpffs (the journal's, under /run):
 * with @create, make it; then check it is a folder of root's, mode 0700, as
 * every state folder must be (no other user may add, move or replace what
 * is in it). 0, or -1 after saying why (errno ENOENT, silently, if it does
 * not exist and @create is not set).
 */
int state_folder(const char *path, int create);

/* What to add to an error whose errno @e is EACCES on xdp-rl's state. */
const char *state_denied_hint(int e);

#endif
