// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/metrics.c - `xdp-rl metrics`: every counter in Prometheus's text format, once. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>

#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "metrics.h"

enum { OPT_OUTPUT = 256, OPT_RULE_SERIES };

static const char *const metrics_forms[] = { "[IFACE] [--output FILE] [--rule-series each|none]",
					     NULL };

static const struct opt_spec metrics_opts[] = {
	{ "output", OPT_OUTPUT, "FILE",
	  "write them to FILE (for node_exporter's textfile collector: a\n"
	  "temporary file in FILE's folder, renamed over FILE when whole)" },
	{ "rule-series", OPT_RULE_SERIES, "each|none",
	  "a series of each rule (the default), or none: the totals by\n"
	  "verdict count every rule's packets, and thousands of rules\n"
	  "make tens of thousands of series" },
	{ NULL },
};

static const struct opt_words metrics_words[] = {
	{ "rule-series", rule_series_words },
	{ NULL },
};

static int cmd_metrics(int argc, char **argv);

/* --rule-series: 1 each, 0 none. */
static int rule_series = 1;

const struct cmd_spec cmd_metrics_spec = {
	.name = "metrics",
	.run = cmd_metrics,
	.forms = metrics_forms,
	.about = "Print every counter of the limiters in this network namespace (or on IFACE)\n"
		 "in the Prometheus text exposition format: packets and bytes by verdict,\n"
		 "per rule, table fill, inserts and evictions, the limits in force, build\n"
		 "info. No per-source series: 'xdp-rl top' shows sources.\n",
	.opts = metrics_opts,
	.words = metrics_words,
	.notes = "'xdp-rl exporter' serves the same over HTTP.\n",
};

/*
 * Act on files with the caller's own rights (@lower), or this process's
 * again: a binary given CAP_DAC_OVERRIDE by setcap, run by another user,
 * must not write for them where they could not write themselves (as
 * caps.h's open_as_caller reads). Root's rights are its own: nothing to do.
 */
static int caller_rights(int lower)
{
	static const cap_value_t dac[] = { CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER };
	static cap_t saved;
	cap_t lowered;
	int ret = 0;

	if (getuid() == 0)
		return 0;
	if (!lower) {
		setfsuid(geteuid());
		setfsgid(getegid());
		if (saved && cap_set_proc(saved))
			ret = -1;
		cap_free(saved);
		saved = NULL;
		return ret;
	}
	saved = cap_get_proc();
	lowered = saved ? cap_dup(saved) : NULL;
	if (!lowered ||
	    cap_set_flag(lowered, CAP_EFFECTIVE, sizeof(dac) / sizeof(dac[0]), dac, CAP_CLEAR) ||
	    cap_set_proc(lowered))
		ret = -1;
	cap_free(lowered);
	setfsuid(getuid());
	setfsgid(getgid());
	return ret;
}

/*
 * Write the metrics to @path as node_exporter's textfile collector wants
 * them: whole or not at all, so a scrape never reads half a file. They go
 * to a temporary file in the same folder (same filesystem), made readable
 * by the collector's user, then renamed over @path.
 */
static int write_file(const char *path, const char *ifname)
{
	char tmp[PATH_MAX], copy[PATH_MAX];
	const char *dir;
	FILE *f;
	int fd;

	snprintf(copy, sizeof(copy), "%s", path);
	dir = dirname(copy);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.xdp-rl-metrics.XXXXXX", dir) >= sizeof(tmp)) {
		log_err("cannot write the metrics to %s: the path is too long", path);
		return -1;
	}
	if (caller_rights(1)) {
		log_err("cannot write the metrics to %s: cannot give up this process's rights "
			"to write as its user: %m",
			path);
		caller_rights(0);
		return -1;
	}
	fd = mkstemp(tmp);
	caller_rights(0);
	if (fd < 0) {
		log_err("cannot write the metrics to %s: cannot create a file in %s: %m", path,
			dir);
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		log_err("cannot write the metrics to %s: %m", path);
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (metrics_write(f, ifname, rule_series)) {
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fchmod(fd, 0644) || fflush(f) || fsync(fd) || fclose(f)) {
		log_err("cannot write the metrics to %s: %m", tmp);
		unlink(tmp);
		return -1;
	}
	caller_rights(1);
	if (rename(tmp, path)) {
		caller_rights(0);
		log_err("cannot write the metrics to %s: cannot rename %s over it: %m", path, tmp);
		unlink(tmp);
		return -1;
	}
	caller_rights(0);
	return 0;
}

static int cmd_metrics(int argc, char **argv)
{
	const char *ifname = NULL, *output = NULL, *why;
	unsigned int each = 1;
	int opt;

	while ((opt = cmd_getopt(argc, argv, &cmd_metrics_spec)) != -1) {
		if (opt == OPT_RULE_SERIES) {
			why = word_parse(rule_series_words, optarg, &each);
			if (why)
				return usage_err("metrics",
						 "metrics: invalid --rule-series '%s': %s", optarg,
						 why);
			continue;
		}
		if (opt != OPT_OUTPUT)
			return EXIT_USAGE;
		if (!*optarg)
			return usage_err("metrics", "metrics: empty --output");
		output = optarg;
	}
	rule_series = each;
	if (cmd_no_more(argc, argv, "metrics", 1))
		return EXIT_USAGE;
	if (argc - optind == 1 && cmd_positional(argc, argv, "metrics", "IFACE", 0, &ifname))
		return EXIT_USAGE;
	if (cmd_prepare_read(NEED_BPF, "cannot read the metrics"))
		return EXIT_FAIL;
	if (output)
		return write_file(output, ifname) ? EXIT_FAIL : EXIT_DONE;
	return metrics_write(stdout, ifname, rule_series) ? EXIT_FAIL : EXIT_DONE;
}
