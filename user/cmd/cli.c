// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cli.c - command specs, option parsing and the checks before a command (see cli.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bpffs.h"
#include "caps.h"
#include "cli.h"
#include "lock.h"
#include "log.h"

#define MAX_OPTS     32
#define HELP_COLUMN  21 /* where an option's help starts */
#define LIST_COLUMN  9	/* where a command's forms start in the list */
#define USAGE_INDENT 12 /* where a usage line continues */

const char *cli_netns;

/* Options a command takes more than once: each --layer adds a layer. */
static int repeatable(const char *name)
{
	return !strcmp(name, "layer");
}

int cmd_getopt(int argc, char **argv, const struct cmd_spec *spec)
{
	static struct option opts[MAX_OPTS + 1];
	static unsigned char seen[MAX_OPTS];
	static const struct cmd_spec *built;
	const char *cmd = spec->name;
	int c, n = 0, prev = optind, i;

	/* A new parse (getopt starts again at 1): nothing seen yet. */
	if (optind <= 1)
		memset(seen, 0, sizeof(seen));
	if (built != spec) {
		memset(seen, 0, sizeof(seen));
		for (; spec->opts && spec->opts[n].name && n < MAX_OPTS; n++) {
			opts[n].name = spec->opts[n].name;
			opts[n].has_arg = spec->opts[n].arg ? required_argument : no_argument;
			opts[n].flag = NULL;
			opts[n].val = spec->opts[n].id;
		}
		memset(&opts[n], 0, sizeof(opts[n]));
		built = spec;
	}
	opterr = 0;
	c = getopt_long(argc, argv, ":", opts, NULL);
	if (c == '?') {
		if (optopt && optopt < 128)
			usage_err(cmd, "%s: unknown option '-%c'", cmd, optopt);
		else
			usage_err(cmd, "%s: unknown option '%s'", cmd, argv[optind - 1]);
	} else if (c == ':') {
		usage_err(cmd, "%s: option '%s' needs a value", cmd,
			  argv[optind - 1 >= prev ? optind - 1 : prev]);
		c = '?';
	} else if (c > 0) {
		/* An option given twice would silently take the last: say so instead. */
		for (i = 0; opts[i].name && opts[i].val != c; i++)
			;
		if (opts[i].name && !repeatable(opts[i].name) && seen[i]++) {
			usage_err(cmd, "%s: option '--%s' given twice (give it once)", cmd,
				  opts[i].name);
			c = '?';
		}
	}
	return c;
}

int cmd_positional(int argc, char **argv, const char *cmd, const char *what, int n,
		   const char **out)
{
	if (argc - optind <= n) {
		usage_err(cmd, "%s: missing %s", cmd, what);
		return -1;
	}
	*out = argv[optind + n];
	if (!**out) {
		usage_err(cmd, "%s: empty %s", cmd, what);
		return -1;
	}
	return 0;
}

int cmd_no_more(int argc, char **argv, const char *cmd, int n)
{
	if (argc - optind > n) {
		usage_err(cmd, "%s: unexpected argument '%s'", cmd, argv[optind + n]);
		return -1;
	}
	return 0;
}

int cmd_port(int argc, char **argv, const char *cmd, int n, int has_port, unsigned int *port)
{
	const char *why;
	__u64 v;

	*port = 0;
	if (!has_port)
		return 0;
	if (argc - optind <= n) {
		usage_err(cmd,
			  "%s: this limiter keys by address and destination port (--key): give "
			  "the PORT after the ADDRESS (0 for packets without one)",
			  cmd);
		return -1;
	}
	why = parse_u64(argv[optind + n], 0, 65535, &v);
	if (why) {
		usage_err(cmd, "%s: invalid PORT '%s': %s", cmd, argv[optind + n], why);
		return -1;
	}
	*port = (unsigned int)v;
	return 1;
}

int cmd_prepare(unsigned int caps, const char *what)
{
	if (cli_netns)
		caps |= NEED_SYS_ADMIN;
	if (caps_check(caps, what))
		return -1;
	if (cli_netns && netns_enter(cli_netns))
		return -1;
	return 0;
}

int cmd_prepare_read(unsigned int caps, const char *what)
{
	if (cmd_prepare(caps, what))
		return -1;
	lock_settle();
	return 0;
}

/* @text, each line after the first indented by @indent. */
static void put_indented(FILE *f, const char *text, int indent)
{
	for (; *text; text++) {
		fputc(*text, f);
		if (*text == '\n' && text[1])
			fprintf(f, "%*s", indent, "");
	}
}

void cmd_help(FILE *f, const struct cmd_spec *spec)
{
	const struct opt_spec *o;
	char head[64];
	int n, i;

	for (i = 0; spec->forms[i]; i++) {
		snprintf(head, sizeof(head), "%s [-n NETNS] %s ",
			 i ? "       xdp-rl" : "usage: xdp-rl", spec->name);
		fputs(head, f);
		put_indented(f, spec->forms[i], USAGE_INDENT);
		fputc('\n', f);
	}
	fputc('\n', f);
	fputs(spec->about, f);
	if (spec->opts && spec->opts[0].name)
		fputc('\n', f);
	for (o = spec->opts; o && o->name; o++) {
		n = fprintf(f, "  --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "%*s", n < HELP_COLUMN - 1 ? HELP_COLUMN - n : 2, "");
		put_indented(f, o->help, HELP_COLUMN);
		fputc('\n', f);
	}
	if (spec->notes) {
		fputc('\n', f);
		fputs(spec->notes, f);
	}
}

void cmd_synopsis(FILE *f, const struct cmd_spec *spec)
{
	int i;

	for (i = 0; spec->forms[i]; i++) {
		fprintf(f, "  %-*s", LIST_COLUMN - 3, spec->name);
		fputc(' ', f);
		put_indented(f, spec->forms[i], LIST_COLUMN);
		fputc('\n', f);
	}
}

/*
 * A form's first word names a subcommand when it is a plain lowercase word
 * ("add IFACE CIDR ..."), not an argument ("IFACE"), an option or a group.
 */
static int form_subcommand(const char *form, char *buf, size_t len)
{
	size_t n = strspn(form, "abcdefghijklmnopqrstuvwxyz");

	if (!n || (form[n] && form[n] != ' ' && form[n] != '\n') || n >= len)
		return 0;
	memcpy(buf, form, n);
	buf[n] = '\0';
	return 1;
}

void cmd_list_options(FILE *f, const struct cmd_spec *spec)
{
	const struct word *w, *ws;
	const struct opt_spec *o;
	char sub[32], prev[32] = "";
	int i;

	fprintf(f, "command\t%s\n", spec->name);
	for (i = 0; spec->forms[i]; i++)
		if (form_subcommand(spec->forms[i], sub, sizeof(sub)) && strcmp(sub, prev)) {
			fprintf(f, "subcommand\t%s\t%s\n", spec->name, sub);
			strcpy(prev, sub);
		}
	for (o = spec->opts; o && o->name; o++) {
		fprintf(f, "option\t%s\t--%s", spec->name, o->name);
		if (o->arg)
			fprintf(f, "\t%s", o->arg);
		ws = NULL;
		for (i = 0; o->arg && spec->words && spec->words[i].opt; i++)
			if (!strcmp(spec->words[i].opt, o->name))
				ws = spec->words[i].words;
		for (w = ws; w && w->name; w++)
			fprintf(f, "%c%s", w == ws ? '\t' : ' ', w->name);
		fputc('\n', f);
	}
}
