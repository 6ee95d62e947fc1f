/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * log.h - exit codes, the one error function, and the debug trace.
 *
 * Bottom layer: depends on nothing else of xdp-rl. stdout is kept for
 * results (and valid JSON); everything here writes to stderr.
 */
#ifndef XDP_RL_LOG_H
#define XDP_RL_LOG_H

/* Exit codes mean one thing each. */
enum {
	EXIT_DONE = 0,	/* done */
	EXIT_FAIL = 1,	/* runtime failure */
	EXIT_USAGE = 2, /* usage error: nothing was changed */
};

/* 0: errors only; 1 (-v): xdp-rl's own trace; 2 (-vv): and libbpf's log. */
extern int log_level;

/* "xdp-rl: <what was being done>: <cause> (<fix>)" */
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "xdp-rl: warning: ..." */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "xdp-rl: debug: ...", with -v only. */
void log_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: the message, a pointer to help, and EXIT_USAGE. */
int usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first error (log_err, usage_err) this run printed, or NULL. */
const char *log_first_error(void);

/* The name of the map libbpf last failed to create, or NULL. */
const char *log_libbpf_failed_map(void);
/* Route libbpf's log through log_level (shown with -vv). */
void log_setup_libbpf(void);

#endif
