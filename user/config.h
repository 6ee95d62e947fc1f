/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * config.h - a limiter described by a file, in the CLI's own words: parsed,
 * printed, read from a running limiter, and compared.
 *
 * The grammar, one line at a time ('#' starts a comment; blank lines and
 * spaces around words do not matter):
 *
 *   interface IFACE       the limiter's interface (default: the file's name
 *                         without .conf: /etc/xdp-rl/eth0.conf is eth0's)
 *   NAME [VALUE]          a setting: a long option of `load` or `set`
 *                         without its dashes, and its value if it takes one
 *                         ("limit 1000", "layer 100/1s", "rate 100/1s",
 *                         "burst 200", "aligned",
 *                         "new-sources off", "enforce"); parsed by the
 *                         options' own parser (settings.h). Every option but
 *                         --force and --rules; once each, but layer.
 *   rule CIDR OPTIONS     a rule, as a rules file line (rules.h: rule_parse)
 *   allow-list FILE       the allow (deny) list: FILE's prefixes (lists.h),
 *   deny-list FILE        FILE an absolute path; not given: an empty list
 *
 * A setting not given takes load's default, so a file says the whole
 * limiter: `xdp-rl apply` makes the running one match it.
 */
#ifndef XDP_RL_CONFIG_H
#define XDP_RL_CONFIG_H

#include <stdio.h>
#include <net/if.h>

#include "limiter.h"
#include "settings.h"

/* Where a limiter's file lives unless named: CONFIG_DIR/IFACE.conf. */
#define CONFIG_DIR    "/etc/xdp-rl"
#define CONFIG_SUFFIX ".conf"

struct config {
	char ifname[IF_NAMESIZE];
	struct settings s; /* s.rules: sorted, to free (config_free) */
	unsigned int line[OPT_END - OPT_LIMIT +
			  SETTINGS_MAX]; /* where each setting is given (by id), 0: not */
	/*
	 * The files of the allow and deny lists (lists.h), "" for none; of a
	 * running limiter, where its lists came from, and how many prefixes
	 * each has (a list not from a file prints as a comment).
	 */
	char list_path[2][XDP_RL_LIST_PATH];
	unsigned int list_line[2];
	__u64 list_prefixes[2];
	int from_file; /* parsed (its lists are its files'), not read from a limiter */
};

/*
 * Parse the config text @text (@len bytes) of the file called @name into
 * @c: 0, or -1 with "NAME:LINE: what is wrong" in @why. Settings not given
 * take load's defaults; settings_finish_load has run. Free @c with
 * config_free either way.
 */
int config_parse(const char *text, size_t len, const char *name, struct config *c, char *why,
		 size_t wlen);
/*
 * config_parse of the file @path ("-": stdin), read with the caller's
 * rights. EXIT_DONE, or EXIT_USAGE after saying why ("@cmd: PATH:LINE:
 * ..."), or EXIT_FAIL if it cannot be read.
 */
int config_read(const char *path, struct config *c, const char *cmd);
void config_free(struct config *c);

/* The running limiter @l as a config: every setting, and its rules. 0, or -1 (errno). */
int config_of(const struct limiter *l, struct config *c);

/* @c as a file: every setting explicit, the rules sorted; parsed back, the same. */
void config_print(FILE *f, const struct config *c);
/* config_print into a string (to free): NULL if out of memory. */
char *config_text(const struct config *c, size_t *len);

/*
 * Call @fn for each setting that differs from @old in @new, with a line
 * that says so ("limit 500 (was limit 1000)"). Returns how many differ.
 */
typedef void (*config_diff_fn)(const char *what, void *ctx);
int config_diff_settings(const struct config *old, const struct config *new, config_diff_fn fn,
			 void *ctx);
/* Whether @b runs in libxdp's dispatcher as @a does (its priority, where it passes to). */
int config_same_attach(const struct config *a, const struct config *b);
/* Whether @a and @b have the same source tables (the fixed settings, but the mode). */
int config_same_tables(const struct config *a, const struct config *b);

#endif
