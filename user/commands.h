/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* commands.h - the command table's entries and what they share. */
#ifndef XDP_RL_COMMANDS_H
#define XDP_RL_COMMANDS_H

#include <getopt.h>
#include <linux/types.h>
#include "xdp_rl.h"

/* Load-time defaults (README: "Choosing a table size"). */
#define DEFAULT_LIMIT		1000
#define DEFAULT_WINDOW_NS	1000000000ULL
#define DEFAULT_MAX_SOURCES	262144
#define MAX_SOURCES_MIN		16
#define MAX_SOURCES_MAX		(1ULL << 26)

int cmd_load(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_unload(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_rule(int argc, char **argv);

/*
 * After a command has parsed its arguments: check the capabilities it needs
 * and enter the -n namespace. Prints why on failure.
 */
int cmd_prepare(unsigned int caps, const char *what);

/*
 * getopt_long, quiet, with our own message for an unknown option or a missing
 * value. Returns the option, -1 at the end, or '?' after printing the error.
 */
int cmd_getopt(int argc, char **argv, const char *cmd, const struct option *opts);

/* The one positional argument a command takes, or a usage error. */
int cmd_positional(int argc, char **argv, const char *cmd, const char *what,
		   int n, const char **out);

/* The clock the datapath uses for these settings, in ns. */
__u64 window_clock_ns(const struct xdp_rl_live *live);
/* CLOCK_REALTIME - CLOCK_TAI, for aligned windows. */
__s64 tai_to_unix_ns(void);

/* Derived settings (the clock, the TAI offset), before publishing @live. */
void live_finish(struct xdp_rl_live *live, __u64 rules_min_window,
		 const struct xdp_rl_live *prev, int rules_changed);

/* Human-readable summary: "1000 packets per 1s window, per key". */
void describe_limit(const struct xdp_rl_live *live, int bytes, char *buf, size_t len);

#endif
