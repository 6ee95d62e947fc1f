// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* log.c - error reporting. stdout is kept for results (and valid JSON). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>

#include "log.h"

int verbose;

void err(const char *fmt, ...)
{
	va_list ap;

	fputs("xdp-rl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("xdp-rl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, " (see 'xdp-rl %s --help')\n", cmd);
	else
		fputs(" (see 'xdp-rl help')\n", stderr);
	return EXIT_USAGE;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
