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

/*
 * @s on stderr, each byte that is not printable ASCII (a tab, an escape, a
 * byte of 0x80 and up in an interface name someone typed) as \xNN, so that
 * a message is one line of text whatever it quotes.
 */
static void put_escaped(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f)
			fprintf(stderr, "\\x%02x", *p);
		else
			fputc(*p, stderr);
	}
}

static void vsay(const char *prefix, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fputs("xdp-rl: ", stderr);
	fputs(prefix, stderr);
	put_escaped(msg);
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
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	keep_first(fmt, ap);
	va_end(ap);
	fputs("xdp-rl: ", stderr);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	put_escaped(msg);
	if (cmd)
		fprintf(stderr, " (see 'xdp-rl %s --help')\n", cmd);
	else
		fputs(" (see 'xdp-rl help')\n", stderr);
	return EXIT_USAGE;
}

/* The map libbpf last said it could not create ("map 'src4': failed to create: ..."). */
static char failed_map[64];

const char *log_libbpf_failed_map(void)
{
	return failed_map[0] ? failed_map : NULL;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	const char *p;
	char msg[256];
	va_list cp;

	if (level == LIBBPF_WARN) {
		va_copy(cp, ap);
		vsnprintf(msg, sizeof(msg), fmt, cp);
		va_end(cp);
		p = strstr(msg, "map '");
		if (p && strstr(p, "': failed to create"))
			sscanf(p + 5, "%63[^']", failed_map);
	}
	if (log_level < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
