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
/*
 * The command that lists this namespace's interfaces, for an error's hint:
 * "ip -n NETNS link" after netns_enter, else "ip link".
 */
const char *netns_ip_link(void);
/* This network namespace's cookie (SO_NETNS_COOKIE), 0 if the kernel has none. */
__u64 netns_cookie(void);

/* The folder of every namespace's limiters; with @create, make it (and bpffs). */
int root_dir(char *out, size_t len, int create);
/* The limiters' folder for this netns; with @create, make it (and bpffs). */
int state_dir(char *out, size_t len, int create);
/*
 * Take this namespace's lock, which serialises changes to its limiters: a
 * flock on its folder (state_dir), so that commands in two namespaces
 * never wait on each other. An fd, held until state_unlock or the process
 * exits. Waits (saying who holds it after a second) up to XDP_RL_LOCK_WAIT
 * seconds, 30 by default. With @nowait, for a command that only reads:
 * fails at once with errno EWOULDBLOCK if it is held, or ENOENT if nothing
 * was ever loaded here, saying nothing.
 */
int state_lock(int nowait);
/* Let go of state_lock's lock, removing the namespace's folder if it is empty. */
void state_unlock(int fd);
/*
 * flock @dir, a namespace's folder, as state_lock does: an fd, or -1 with
 * errno (EWOULDBLOCK: held, said unless @nowait; ENOENT: gone, @nowait).
 * @whose names the namespace in messages.
 */
int folder_lock(const char *dir, int nowait, const char *whose);
/* Which namespace commands act in, for messages: "netns NAME" or "this network namespace". */
const char *netns_label(void);

/*
 * A folder of xdp-rl's state outside bpffs (the journal's, under /run):
 * with @create, make it; then check it is a folder of root's, mode 0700, as
 * every state folder must be (no other user may add, move or replace what
 * is in it). 0, or -1 after saying why (errno ENOENT, silently, if it does
 * not exist and @create is not set).
 */
int state_folder(const char *path, int create);
/*
 * Make folder @path of xdp-rl's state, 0700 and root's whoever made it (a
 * capable user other than root: CAP_CHOWN): 0; -1 with errno, said by no
 * one (EEXIST: it is there); or -2 after saying it could not be root's.
 */
int state_mkdir(const char *path);
/* Give what a capable user other than root made in the state to root: 0, or -1 after saying why. */
int state_own(const char *path);

/* What to add to an error whose errno @e is EACCES on xdp-rl's state. */
const char *state_denied_hint(int e);

#endif
