// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/apply.c - `xdp-rl apply`: make a limiter match its config file, as `nft -f` does. */
#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "lists.h"
#include "live.h"
#include "lock.h"
#include "log.h"

enum { OPT_CHECK = 256 };

static const char *const apply_forms[] = { "[--check] FILE", NULL };

static const struct opt_spec apply_opts[] = {
	{ "check", OPT_CHECK, NULL,
	  "read FILE and say what it describes, or what is wrong, and\n(as root) what applying it would change; touch nothing" },
	{ NULL },
};

static int cmd_apply(int argc, char **argv);

const struct cmd_spec cmd_apply_spec = {
	.name = "apply",
	.run = cmd_apply,
	.forms = apply_forms,
	.about = "Make the limiter FILE describes match it: load it if there is none, else change\n"
		 "only what differs, and print a line per change.\n",
	.opts = apply_opts,
	.notes = "FILE ('-': stdin; by convention /etc/xdp-rl/IFACE.conf) holds a line each:\n"
		 "  interface IFACE     (default: FILE's name without .conf)\n"
		 "  SETTING [VALUE]     an option of 'xdp-rl load' or 'set', without its dashes:\n"
		 "                      limit 1000, layer 100/1s, aligned, new-sources off, ...\n"
		 "  rule CIDR OPTIONS   as 'xdp-rl rule add IFACE' takes them\n"
		 "'#' starts a comment. A setting not given takes load's default; 'xdp-rl config\n"
		 "IFACE' prints a running limiter this way.\n"
		 "\n"
		 "Settings change live and rules are added, changed and deleted, keeping every\n"
		 "source's window where the change allows; new source tables (bytes, a prefix,\n"
		 "key, max-sources, max-layers) replace the limiter as 'load --force' does. A\n"
		 "file with an error changes nothing (exit 2), nor does a refusal (exit 1); an\n"
		 "apply that is killed is finished by the next xdp-rl command.\n",
};

static int cmd_apply(int argc, char **argv)
{
	const char *path;
	struct config c;
	char desc[256];
	int opt, check = 0, r;

	while ((opt = cmd_getopt(argc, argv, &cmd_apply_spec)) != -1) {
		if (opt != OPT_CHECK)
			return EXIT_USAGE;
		check = 1;
	}
	if (cmd_positional(argc, argv, "apply", "FILE", 0, &path) ||
	    cmd_no_more(argc, argv, "apply", 1))
		return EXIT_USAGE;
	r = config_read(path, &c, "apply");
	if (r)
		return r;
	if (check) {
		struct prefix_list pl[LIST_KINDS];
		int k;

		/* The lists' files too: a bad one is a bad config. */
		if (apply_read_lists(&c, pl)) {
			config_free(&c);
			return EXIT_USAGE;
		}
		live_describe(&c.s.live, c.s.fixed.bytes, desc, sizeof(desc));
		printf("xdp-rl: %s: good: %s (%s mode): %s, %zu rule%s", path, c.ifname,
		       word_name(mode_words, c.s.fixed.xdp_mode), desc, c.s.nrules,
		       c.s.nrules == 1 ? "" : "s");
		for (k = 0; k < LIST_KINDS; k++)
			if (*c.list_path[k])
				printf(", %s list of %zu prefix%s", list_names[k], pl[k].n,
				       pl[k].n == 1 ? "" : "es");
		putchar('\n');
		list_free(&pl[0]);
		list_free(&pl[1]);
		/*
		 * What it would change on the running limiter, where it may be
		 * read (root, or the capabilities); otherwise the file alone.
		 */
		r = EXIT_DONE;
		if (caps_have(NEED_BPF | NEED_NET_ADMIN | (cli_netns ? NEED_SYS_ADMIN : 0)) &&
		    !cmd_prepare_read(NEED_BPF | NEED_NET_ADMIN, "cannot compare with the limiter"))
			r = apply_preview(&c, stdout);
		config_free(&c);
		return r;
	}
	if (cmd_prepare(NEED_BPF | NEED_PERFMON | NEED_NET_ADMIN, "cannot apply") ||
	    lock_take(1) < 0) {
		config_free(&c);
		return EXIT_FAIL;
	}
	r = apply_config(&c, stdout);
	config_free(&c);
	return r;
}
