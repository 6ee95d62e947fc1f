// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_unload.c - `xdp-rl unload`: detach a limiter and remove its state. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <bpf/bpf.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "limiter.h"
#include "log.h"

static const char *const unload_forms[] = { "IFACE", NULL };

static int cmd_unload(int argc, char **argv);

const struct cmd_spec cmd_unload_spec = {
	.name = "unload",
	.run = cmd_unload,
	.forms = unload_forms,
	.about = "Detach the limiter from IFACE and remove every piece of state it made.\n",
};

/*
 * `unload NAME` after the interface NAME went away: its limiter is detached
 * already (status shows it DETACHED). Find its state by the name it was
 * loaded on and let the pin garbage collector remove it. 1 if it did.
 */
static int unload_gone(const char *ifname)
{
	char dir[PATH_MAX];

	if (limiter_find_by_name(ifname, dir, sizeof(dir)))
		return 0;
	pins_gc();
	return access(dir, F_OK) != 0;
}

static int cmd_unload(int argc, char **argv)
{
	const char *ifname;
	struct limiter l;

	if (cmd_getopt(argc, argv, &cmd_unload_spec) != -1)
		return EXIT_USAGE;
	if (cmd_positional(argc, argv, "unload", "IFACE", 0, &ifname) ||
	    cmd_no_more(argc, argv, "unload", 1))
		return EXIT_USAGE;

	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot unload") || state_lock() < 0)
		return EXIT_FAIL;
	if (strlen(ifname) < IF_NAMESIZE && !if_nametoindex(ifname) && unload_gone(ifname)) {
		printf("xdp-rl: %s is gone; removed the state of its limiter\n", ifname);
		return EXIT_DONE;
	}
	if (limiter_open(ifname, &l, "cannot unload from"))
		return EXIT_FAIL;
	if (bpf_link_detach(l.fd[PIN_LINK]) && errno != ENOLINK) {
		log_err("cannot detach from '%s': %m", ifname);
		limiter_close(&l);
		return EXIT_FAIL;
	}
	limiter_close(&l);
	if (pins_remove(l.dir)) {
		log_err("detached from '%s', but cannot remove %s: %m", ifname, l.dir);
		return EXIT_FAIL;
	}
	printf("xdp-rl: unloaded from %s\n", ifname);
	return EXIT_DONE;
}
