/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * apply.h - a running limiter made to match a config (config.h), as
 * `nft -f` does; and the lock every command takes, which first finishes
 * what a killed command left half done, an apply included.
 *
 * An apply journals its target (journal.h) before its first step, and
 * removes the journal after its last; a command that finds a journal
 * applies it again before anything else, and says so. Re-applying a target
 * changes only what still differs, so a kill at any step of an apply leaves
 * the limiter as it was or, once the journal is written, as the file says.
 * apply.c has the steps.
 */
#ifndef XDP_RL_APPLY_H
#define XDP_RL_APPLY_H

#include <stdio.h>
#include "config.h"

/*
 * Make the limiter on c->ifname match @c (config_parse's): load it if
 * there is none; else change only what differs, keeping every source's
 * window where the change allows; the source tables' settings (bytes,
 * prefixes, max-sources, max-layers) need a replacement, as load --force.
 * Prints what it changed to @out, a line each, or that there was nothing to
 * change. The caller holds the lock (lock.h). EXIT_DONE; or EXIT_FAIL
 * after saying why, and nothing changed (a change that fails half way is
 * undone the same way: the limiter as it was is applied again).
 */
int apply_config(struct config *c, FILE *out);
/*
 * What apply_config would do to the limiter on c->ifname, a line each
 * ("would be: ..."), doing nothing (apply --check). EXIT_DONE, or EXIT_FAIL
 * after saying why (the limiter cannot be read).
 */
int apply_preview(struct config *c, FILE *out);
/*
 * The allow and deny lists @c names, read into @pl[2] (lists.h; empty for a
 * list not named): 0, or -1 after saying why.
 */
struct prefix_list;
int apply_read_lists(const struct config *c, struct prefix_list *pl);

/*
 * Apply this namespace's journal again, if it has one (an apply was
 * killed): the limiter is then as its file says, or the journal is removed
 * with a warning saying why. The state lock is held (lock.h).
 */
void apply_recover(void);

#endif
