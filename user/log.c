// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* log.c - error reporting on stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>

#include "log.h"

int log_level;

/* The first error of this run, for its audit record (audit.h). */
static char first_error[512];

static void keep_first(const char *fmt, va_list ap)
{
	if (!first_error[0])
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
}

const char *log_first_error(void)
{
	return first_error[0] ? first_error : NULL;
}

static void vsay(const char *prefix, const char *fmt, va_list ap)
{
	fputs("xdp-rl: ", stderr);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	keep_first(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vsay("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("warning: ", fmt, ap);
	va_end(ap);
}

void log_dbg(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 1)
		return;
	va_start(ap, fmt);
	vsay("debug: ", fmt, ap);
	va_end(ap);
}

int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	keep_first(fmt, ap);
	va_end(ap);
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
	if (log_level < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
