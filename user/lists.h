/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.h - a limiter's allow and deny lists (include/xdp_rl.h: block lists
 * of up to XDP_RL_MAX_PREFIXES prefixes, one LPM trie put in whole): read
 * from files, replaced at once, described and looked up.
 *
 * A list file holds a prefix or an address a line (netset, DROP and
 * plain address lists alike); '#' and ';' start a comment. A prefix with
 * bits set past its length, an IPv4-mapped address, and a prefix on both
 * lists are refused, naming the file and the line; a prefix given twice is
 * kept once.
 */
#ifndef XDP_RL_LISTS_H
#define XDP_RL_LISTS_H

#include "limiter.h"
#include "options.h"

enum { LIST_ALLOW, LIST_DENY, LIST_KINDS };

/* "allow", "deny". */
extern const char *const list_names[LIST_KINDS];

struct list_prefix {
	struct ip_addr addr;
	unsigned int len;
	unsigned int line; /* in its file; 0 if read from the trie */
};

/* One list: its prefixes, sorted, each once. */
struct prefix_list {
	struct list_prefix *v;
	size_t n, cap;
	__u64 count[2]; /* IPv4, IPv6 */
	__u64 hash;	/* of the prefixes (what a replacement compares) */
	char path[XDP_RL_LIST_PATH];
};

void list_free(struct prefix_list *pl);
/*
 * Read the list file @path (as the caller, caps.h) into @pl, its path
 * kept. 0; or -1 with why in @why ("FILE:LINE: ..."), and errno for a
 * file that cannot be read.
 */
int list_read_file(const char *path, struct prefix_list *pl, char *why, size_t len);
/* Parse @text (@len bytes) of a list file named @name: as list_read_file. */
int list_parse(const char *text, size_t len, const char *name, struct prefix_list *pl, char *why,
	       size_t wlen);

/*
 * What describes the lists in force on @l, into @m: the list_meta slot of
 * the trie in `lists`, or, if no slot does (a replacement killed half
 * way, or a limiter older than the lists), their prefixes counted again,
 * paths unknown. 0, or -1 with errno.
 */
int lists_meta(const struct limiter *l, struct xdp_rl_list_meta *m);
/* The prefixes of list @kind in force on @l, into @pl (path from the meta). 0, or -1. */
int lists_get(const struct limiter *l, int kind, struct prefix_list *pl);
/*
 * Put @allow and @deny in force on @l, at once for every packet (a new
 * trie, one update of `lists`; the datapath told to look first, told to
 * stop after when a family has none): see include/xdp_rl.h. Refuses a
 * prefix on both. 0, or -1 after saying why (the lists in force are left).
 */
int lists_replace(struct limiter *l, const struct prefix_list *allow,
		  const struct prefix_list *deny);
/*
 * Hold the lists in force on @l, to put them back if what follows a
 * replacement fails (apply): their trie in *@fd (-1: none; close it) and
 * description in *@m. 0, or -1 with errno.
 */
int lists_hold(const struct limiter *l, int *fd, struct xdp_rl_list_meta *m);
/* Put back what lists_hold held. 0, or -1 after saying why. */
int lists_restore(struct limiter *l, int fd, const struct xdp_rl_list_meta *m);
/* Whether @allow and @deny are the lists @m describes (same prefixes, same files). */
int lists_same(const struct xdp_rl_list_meta *m, const struct prefix_list *allow,
	       const struct prefix_list *deny);
/*
 * The listed prefix that holds @a: 1 with its list in *@kind and prefix in
 * @p, 0 if none, -1 if the trie cannot be read.
 */
int lists_lookup(const struct limiter *l, const struct ip_addr *a, int *kind,
		 struct list_prefix *p);
/* The live flags the lists in force want (XDP_RL_F_LISTS4/6), from @m. */
__u32 lists_flags(const struct xdp_rl_list_meta *m);

#endif
