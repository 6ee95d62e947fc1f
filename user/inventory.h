/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * inventory.h - every limiter pinned on this host, in every namespace's
 * folder: where it was loaded, whether its namespace and its interface are
 * still there, and the memory its maps hold, as the kernel accounts for it
 * (memlock in the maps' fdinfo). A limiter whose interface or namespace is
 * gone keeps its maps until something removes its pins: `status --all`
 * shows them, `gc` removes them.
 *
 * A namespace is found alive by its inode (the folder's name) where the
 * kernel shows one: /run/netns, a process's or a thread's ns/net, a
 * descriptor a process holds; and it is the same namespace if its cookie
 * is the one the limiter recorded at load (an inode may be reused by a
 * namespace made later). Telling cookies apart enters each namespace, which
 * takes CAP_SYS_ADMIN; without it an inode found is taken for the same.
 */
#ifndef XDP_RL_INVENTORY_H
#define XDP_RL_INVENTORY_H

#include <limits.h>
#include "limiter.h"

enum ns_state {
	NS_HERE,  /* this namespace */
	NS_OTHER, /* another namespace, still there */
	NS_GONE,  /* its namespace was deleted */
};

struct pinned {
	char dir[PATH_MAX];   /* <root>/<netns inode>/<ifindex> */
	unsigned long netns;  /* the namespace's inode, as the folder is named */
	unsigned int ifindex; /* as the folder is named */
	int has_config;	      /* cfg was read */
	struct xdp_rl_config cfg;
	enum ns_state ns;
	char ns_name[NAME_MAX + 1]; /* its name in /run/netns, or "" */
	int attached;		    /* its link is attached to an interface */
	__u32 link_ifindex;	    /* that interface, in the limiter's namespace */
	__u32 link_id, prog_id;
	__u64 memory; /* bytes its maps hold */
	int maps;     /* maps found pinned */
};

/* What ns_state each is: "here", "other", "gone". */
const char *ns_state_name(enum ns_state s);

/* The bytes the maps in @fd (PIN_* indexed, -1 for none) hold, as the kernel accounts them. */
__u64 maps_memory(const int *fd, int *maps);

/*
 * Call @fn for every limiter pinned in every namespace's folder (<ifindex>
 * folders; a change in progress, <ifindex>-new or -del, is not one). 0, 1
 * if @fn stopped it, or -1 if the folders cannot be read (said on stderr).
 * With nothing ever loaded, there is nothing to list: 0.
 */
typedef int (*pinned_fn)(struct pinned *p, void *ctx);
int pinned_foreach(pinned_fn fn, void *ctx);

/* Read again whether @p's link is attached (after its namespace went). */
void pinned_link(struct pinned *p);

/* Every limiter pinned on this host (pinned_foreach), in @l (free l->v): 0, or -1 after saying why. */
struct pinned_list {
	struct pinned *v;
	size_t n, cap;
};
int pinned_all(struct pinned_list *l);

/* @p's interface's name: its name now if it is in this namespace, else the one it was loaded on. */
void pinned_ifname(const struct pinned *p, char *buf, size_t len);
/* Where @p is: "this namespace", "netns 4026532281 (web)", "netns 4026532281, deleted". */
void pinned_where(const struct pinned *p, char *buf, size_t len);
/* Why gc removes @p ("its namespace is gone", ...), or NULL if it is live. */
const char *pinned_gone(const struct pinned *p);

/* "42.0 MB", "512 kB", "900 B": @bytes for people (powers of 1000). */
void fmt_bytes(__u64 bytes, char *buf, size_t len);

#endif
