/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* log.h - the one error function, exit codes and libbpf's log. */
#ifndef XDP_RL_LOG_H
#define XDP_RL_LOG_H

/* Exit codes mean one thing each. */
enum {
	EXIT_DONE = 0,		/* done */
	EXIT_FAIL = 1,		/* runtime failure */
	EXIT_USAGE = 2,		/* usage error: nothing was changed */
};

extern int verbose;

/* "xdp-rl: <what was being done>: <cause> (<fix>)" on stderr. */
void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: the message, a pointer to help, and EXIT_USAGE. */
int usage_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* libbpf's own log goes to stderr only with -v. */
void log_setup_libbpf(void);

#endif
