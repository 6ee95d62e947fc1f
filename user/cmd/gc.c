// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cmd/gc.c - `xdp-rl gc`: remove the limiters whose interface or namespace
 * is gone (inventory.h; `status --all` shows them).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "dispatch.h"
#include "inventory.h"
#include "json.h"
#include "limiter.h"
#include "lock.h"
#include "log.h"

/*
 * A namespace's deletion tears its interfaces down after `ip netns del`
 * returns (the kernel does it in a worker): a limiter whose namespace is
 * gone may keep its link attached for a moment. gc waits that long for it.
 */
#define GONE_WAIT_MS 3000

/* ---- gc ------------------------------------------------------------------------ */

enum { OPT_GC_DRY_RUN = 256 };

static const char *const gc_forms[] = { "[--dry-run]", NULL };

static const struct opt_spec gc_opts[] = {
	{ "dry-run", OPT_GC_DRY_RUN, NULL, "say what it would remove, and remove nothing" },
	{ NULL },
};

/*
 * Remove @p's pins. Another namespace's folder is locked first, at once or
 * not at all (a command there is at work on it: errno EWOULDBLOCK), and
 * goes with its last limiter; this namespace's lock is held already.
 */
static int remove_pinned(const struct pinned *p, const char *where)
{
	char ns[PATH_MAX], *slash;
	int fd = -1, r;

	snprintf(ns, sizeof(ns), "%s", p->dir);
	slash = strrchr(ns, '/');
	if (slash)
		*slash = '\0';
	if (p->ns != NS_HERE) {
		fd = folder_lock(ns, 1, where);
		if (fd < 0)
			return -1;
	}
	/* Shared, its namespace gone: libxdp's pins of its dead dispatcher hold its maps too. */
	if (p->ns == NS_GONE && p->has_config && p->cfg.fixed.attach == XDP_RL_ATTACH_SHARED)
		dispatch_forget(p->cfg.fixed.ifindex, pinned_id(p->dir, pin_names[PIN_PROG]));
	r = pins_remove(p->dir);
	if (fd >= 0) {
		rmdir(ns); /* only if now empty, and before its lock goes */
		close(fd);
	}
	return r;
}

static int cmd_gc(int argc, char **argv);

const struct cmd_spec cmd_gc_spec = {
	.name = "gc",
	.run = cmd_gc,
	.forms = gc_forms,
	.about = "Remove the limiters whose interface or network namespace is gone, in every\n"
		 "namespace's folder, and say how much memory their maps held. A limiter\n"
		 "attached to an interface is never removed. 'xdp-rl status --all' lists\n"
		 "them first.\n",
	.opts = gc_opts,
};

static int cmd_gc(int argc, char **argv)
{
	char name[IF_NAMESIZE + 8], where[NAME_MAX + 64], mem[32];
	struct pinned_list l;
	int waited = 0, removed = 0, kept = 0, failed = 0, dry = 0, lock, opt;
	__u64 freed = 0;
	size_t i;

	while ((opt = cmd_getopt(argc, argv, &cmd_gc_spec)) != -1) {
		if (opt != OPT_GC_DRY_RUN)
			return EXIT_USAGE;
		dry = 1;
	}
	if (cmd_no_more(argc, argv, "gc", 0))
		return EXIT_USAGE;
	/* Other namespaces are entered to tell them apart (inventory.h). */
	if (cmd_prepare(NEED_BPF | NEED_SYS_ADMIN, "cannot collect garbage"))
		return EXIT_FAIL;
	/* Under the lock, after what a killed command (an apply too) left half done is settled. */
	lock = lock_take(0);
	if (lock < 0)
		return EXIT_FAIL;
	if (pinned_all(&l)) {
		lock_release(lock);
		return EXIT_FAIL;
	}
	for (i = 0; i < l.n; i++) {
		struct pinned *p = &l.v[i];

		/* Its namespace is gone, its interface not yet: give the kernel a moment. */
		while (p->attached && p->ns == NS_GONE && waited < GONE_WAIT_MS) {
			usleep(100 * 1000);
			waited += 100;
			pinned_link(p);
		}
		pinned_ifname(p, name, sizeof(name));
		pinned_where(p, where, sizeof(where));
		fmt_bytes(p->memory, mem, sizeof(mem));
		if (!pinned_gone(p)) {
			if (p->ns == NS_GONE) {
				kept++;
				log_warn(
					"kept the limiter on %s (ifindex %u), %s: its namespace is "
					"gone but its link is still attached to interface %u, which "
					"outlived it (a device moved to another namespace); it still "
					"limits that interface",
					name, p->ifindex, where, p->link_ifindex);
			}
			continue;
		}
		if (!dry && remove_pinned(p, where)) {
			if (errno == EWOULDBLOCK)
				log_err("cannot remove the limiter on %s (ifindex %u), %s: a command "
					"there holds its lock (try again when it is done)",
					name, p->ifindex, where);
			else
				log_err("cannot remove %s: %m", p->dir);
			failed++;
			continue;
		}
		printf("xdp-rl: %s the limiter loaded on %s (ifindex %u), %s: %s; its maps "
		       "hold %s\n",
		       dry ? "would remove" : "removed", name, p->ifindex, where, pinned_gone(p),
		       mem);
		removed++;
		freed += p->memory;
	}
	fmt_bytes(freed, mem, sizeof(mem));
	if (removed)
		printf("xdp-rl: %s %d limiter%s, %s %s\n", dry ? "would remove" : "removed",
		       removed, removed == 1 ? "" : "s", dry ? "freeing" : "freed", mem);
	else if (!failed)
		printf("xdp-rl: nothing to remove: %zu limiter%s, each attached%s\n", l.n,
		       l.n == 1 ? "" : "s", kept ? " (see the warnings)" : "");
	free(l.v);
	lock_release(lock);
	return failed ? EXIT_FAIL : EXIT_DONE;
}
