/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * loader.h - a limiter loaded on an interface, or replaced under its link,
 * as settings say: `load`, and `apply` when the limiter is not there or
 * its tables change. The new state is built aside and switched in by one
 * step (limiter.c has the protocol).
 */
#ifndef XDP_RL_LOADER_H
#define XDP_RL_LOADER_H

#include <stdio.h>
#include "settings.h"

/* What a load did. */
struct load_result {
	int replaced;	     /* replaced a running limiter (s->force), else loaded anew */
	int tables_changed;  /* the replacement has new source tables: every window restarted */
	int clocks_changed;  /* it switched --per-key and --aligned: every window restarted */
	int unfinished;	     /* committed, but the next command finishes moving its folder */
	char alone_why[200]; /* --attach auto attached alone: why the dispatcher could not run */
};

/*
 * Load a limiter on @ifname as @s says (its settings finished by
 * settings_finish_load; s->rules go in when s->new_rules), or with
 * s->force replace the one there: without a gap, keeping its windows when
 * the tables stay the same and its rules unless s->new_rules. The caller
 * holds the state lock (lock.h). EXIT_DONE, or EXIT_FAIL after saying
 * why (nothing changed).
 */
int limiter_load(const char *ifname, struct settings *s, struct load_result *res);

/* "xdp-rl: loaded on eth0 (native mode): 1000 packets per 1s window, per key" */
void load_report(FILE *f, const char *ifname, const struct settings *s,
		 const struct load_result *res);

#endif
