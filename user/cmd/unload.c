// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/unload.c - `xdp-rl unload`: detach a limiter and remove its state. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <net/if.h>
#include <bpf/bpf.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "limiter.h"
#include "lock.h"
#include "log.h"

static const char *const unload_forms[] = { "IFACE", NULL };

static int cmd_unload(int argc, char **argv);

const struct cmd_spec cmd_unload_spec = {
	.name = "unload",
	.run = cmd_unload,
	.forms = unload_forms,
	.about = "Detach the limiter from IFACE and remove every piece of state it made.\n",
};

static int cmd_unload(int argc, char **argv)
{
	char gone[PATH_MAX];
	const char *ifname;
	struct limiter l;
	struct stat st;
	int was_gone;

	if (cmd_getopt(argc, argv, &cmd_unload_spec) != -1)
		return EXIT_USAGE;
	if (cmd_positional(argc, argv, "unload", "IFACE", 0, &ifname) ||
	    cmd_no_more(argc, argv, "unload", 1))
		return EXIT_USAGE;
	if (cmd_prepare(NEED_BPF | NEED_NET_ADMIN, "cannot unload"))
		return EXIT_FAIL;
	/*
	 * `unload NAME` after the interface NAME went away: its limiter is
	 * detached already (status shows it DETACHED under the name it was
	 * loaded on), and taking the lock removes it with every limiter whose
	 * interface is gone.
	 */
	was_gone = strlen(ifname) < IF_NAMESIZE && !if_nametoindex(ifname) &&
		   !limiter_find_by_name(ifname, gone, sizeof(gone));
	if (lock_take(1) < 0)
		return EXIT_FAIL;
	if (was_gone && lstat(gone, &st)) {
		printf("xdp-rl: %s is gone; removed the state of its limiter\n", ifname);
		return EXIT_DONE;
	}
	if (limiter_open(ifname, &l, "cannot unload from"))
		return EXIT_FAIL;
	if (limiter_remove(&l)) {
		limiter_close(&l);
		return EXIT_FAIL;
	}
	limiter_close(&l);
	printf("xdp-rl: unloaded from %s\n", ifname);
	return EXIT_DONE;
}
