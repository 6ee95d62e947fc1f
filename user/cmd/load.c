// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/load.c - `xdp-rl load`: attach a limiter, or replace one (--force). */
#include <stdio.h>
#include <stdlib.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "loader.h"
#include "lock.h"
#include "log.h"
#include "rules.h"
#include "settings.h"

static int cmd_load(int argc, char **argv);

const struct cmd_spec cmd_load_spec = {
	.name = "load",
	.run = cmd_load,
	.forms = settings_load_forms,
	.about = "Attach the limiter to IFACE. It keeps running after xdp-rl exits.\n",
	.opts = settings_load_opts,
	.words = settings_words,
};

static int cmd_load(int argc, char **argv)
{
	struct load_result res;
	struct settings s;
	struct why why;
	const char *ifname;
	int opt, r;

	settings_init(&s);
	while ((opt = cmd_getopt(argc, argv, &cmd_load_spec)) != -1) {
		r = settings_option(opt, optarg, &s, &why);
		if (r < 0)
			return usage_err("load", "load: %s", why.text);
		if (!r)
			continue;
		switch (opt) {
		case OPT_FORCE: s.force = 1; break;
		case OPT_RULES: s.rules_path = optarg; break;
		default: return EXIT_USAGE;
		}
	}
	if (cmd_positional(argc, argv, "load", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_no_more(argc, argv, "load", 1))
		return EXIT_USAGE;
	if (s.rules_path && (r = rules_file(s.rules_path, &s.rules, &s.nrules, "load")))
		return r;
	s.new_rules = !!s.rules_path;
	if (settings_finish_load(&s, "load", &why)) {
		if (why.line)
			r = usage_err("load", "load: %s:%u: %s", s.rules_path, why.line, why.text);
		else
			r = usage_err("load", "load: %s", why.text);
		free(s.rules);
		return r;
	}
	if (cmd_prepare(NEED_BPF | NEED_PERFMON | NEED_NET_ADMIN, "cannot load") ||
	    lock_take(1) < 0) {
		free(s.rules);
		return EXIT_FAIL;
	}
	r = limiter_load(ifname, &s, &res);
	if (r == EXIT_DONE && !res.unfinished)
		load_report(stdout, ifname, &s, &res);
	free(s.rules);
	return r;
}
