// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/config.c - `xdp-rl config`: a running limiter as its config file. */
#include <stdio.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "limiter.h"
#include "log.h"

static const char *const config_forms[] = { "IFACE", NULL };

static int cmd_config(int argc, char **argv);

const struct cmd_spec cmd_config_spec = {
	.name = "config",
	.run = cmd_config,
	.forms = config_forms,
	.about = "Print the limiter on IFACE as a config file ('xdp-rl apply --help'): every\n"
		 "setting, then its rules, sorted. Applying it changes nothing; it turns a\n"
		 "limiter tuned by hand into a file:\n"
		 "  xdp-rl config eth0 > /etc/xdp-rl/eth0.conf\n",
};

static int cmd_config(int argc, char **argv)
{
	const char *ifname;
	struct limiter l;
	struct config c;
	int r = EXIT_DONE;

	if (cmd_getopt(argc, argv, &cmd_config_spec) != -1)
		return EXIT_USAGE;
	if (cmd_positional(argc, argv, "config", "IFACE", 0, &ifname) ||
	    cmd_no_more(argc, argv, "config", 1))
		return EXIT_USAGE;
	if (cmd_prepare_read(NEED_BPF, "cannot print the config") ||
	    limiter_open(ifname, &l, "cannot print the config of"))
		return EXIT_FAIL;
	if (config_of(&l, &c)) {
		log_err("cannot print the config of '%s': cannot read its rules: %m", ifname);
		r = EXIT_FAIL;
	} else {
		config_print(stdout, &c);
		if (fflush(stdout) || ferror(stdout)) {
			log_err("cannot print the config of '%s': %m", ifname);
			r = EXIT_FAIL;
		}
	}
	config_free(&c);
	limiter_close(&l);
	return r;
}
