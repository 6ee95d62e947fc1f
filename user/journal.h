/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * journal.h - the journal of an apply in flight: the config it makes the
 * limiter match (config_print's text), written whole before the apply's
 * first step, to a root-only folder of its own outside bpffs (which holds
 * only BPF objects), one file per network namespace; removed after the
 * last step. A command that finds it applies it again (apply.h: re-applying
 * a target is idempotent), so a kill at any step leaves the limiter as it
 * was or as the file says, never between.
 */
#ifndef XDP_RL_JOURNAL_H
#define XDP_RL_JOURNAL_H

#include <stddef.h>

/*
 * Root's, 0700, in RUN_DIR, which must be root's and writable by nobody
 * else (others may share RUN_DIR: a service's RuntimeDirectory).
 */
#define RUN_DIR	    "/run/xdp-rl"
#define JOURNAL_DIR RUN_DIR "/journal"

/* This network namespace's journal: JOURNAL_DIR/apply-<netns cookie>.conf. */
void journal_path(char *out, size_t len);
/* Whether this namespace has a journal (a quick look, without the lock). */
int journal_exists(void);
/*
 * Write @text (@len bytes) as this namespace's journal, whole or not at all:
 * a temporary file, fsync, rename over the journal, fsync of the folder.
 * 0, or -1 after saying why.
 */
int journal_write(const char *text, size_t len);
/* This namespace's journal: 1 with its text in *text (to free), 0 if none, -1 after saying why. */
int journal_read(char **text, size_t *len);
/* Remove this namespace's journal, if any: 0, or -1 after saying why. */
int journal_remove(void);

#endif
