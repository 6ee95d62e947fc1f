// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* main.c - the global options, the command table, and help: dispatch only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "audit.h"
#include "cli.h"
#include "commands.h"
#include "log.h"

static const char *const help_forms[] = { "[COMMAND]", NULL };

static const struct cmd_spec help_spec = {
	.name = "help",
	.forms = help_forms,
	.about = "Show help for xdp-rl or for COMMAND. Every command also takes --help.\n",
};

/* In the order `xdp-rl help` lists them. */
static const struct cmd_spec *const commands[] = {
	&cmd_load_spec,	 &cmd_set_spec,	  &cmd_unload_spec, &cmd_status_spec,  &cmd_stats_spec,
	&cmd_get_spec,	 &cmd_reset_spec, &cmd_charge_spec, &cmd_top_spec,     &cmd_rule_spec,
	&cmd_lists_spec, &cmd_apply_spec, &cmd_config_spec, &cmd_metrics_spec, &cmd_exporter_spec,
	&cmd_gc_spec,	 &cmd_fleet_spec, &cmd_events_spec, &cmd_capture_spec, &help_spec,
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* The options before the command: getopt's table, usage and `help --options` read it. */
static const struct global_opt {
	char letter; /* its short form, or 0 */
	int has_arg;
	const char *name, *arg, *help; /* help NULL: not listed in usage */
} globals[] = {
	{ 'n', required_argument, "netns", "NETNS", "run in network namespace NETNS (as 'ip -n')" },
	{ 'v', no_argument, "verbose", NULL, "show xdp-rl's debug trace; -vv adds libbpf's log" },
	{ 'V', no_argument, "version", NULL, "print the version" },
	{ 'h', no_argument, "help", NULL, NULL },
};

#define N_GLOBALS (sizeof(globals) / sizeof(globals[0]))

/* 'V' stands for --version alone: it has no short form. */
static int has_letter(const struct global_opt *g)
{
	return g->letter != 'V';
}

static void usage(FILE *f)
{
	char left[64];
	size_t i;

	fprintf(f, "usage: xdp-rl [-n NETNS] [-v] COMMAND ...\n\n"
		   "Per-source fixed-window rate limiting at the XDP hook.\n\n");
	for (i = 0; i < N_GLOBALS; i++) {
		const struct global_opt *g = &globals[i];

		if (!g->help)
			continue;
		snprintf(left, sizeof(left), "%c%c%c --%s%s%s", has_letter(g) ? '-' : ' ',
			 has_letter(g) ? g->letter : ' ', has_letter(g) ? ',' : ' ', g->name,
			 g->arg ? " " : "", g->arg ? g->arg : "");
		fprintf(f, "  %-17s  %s\n", left, g->help);
	}
	fprintf(f, "\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		cmd_synopsis(f, commands[i]);
	fprintf(f, "\nRun 'xdp-rl help COMMAND' or 'xdp-rl COMMAND --help' for details.\n");
}

/*
 * `xdp-rl help --options`: every command, subcommand and option, with the
 * words an option's value is one of, a line each and tab-separated, for
 * the shell completion's tests and the documentation's (tests/e2e):
 *   global   --netns NETNS        (and -n NETNS: a short form, alone)
 *   command  NAME
 *   subcommand NAME SUB
 *   option   NAME --OPT [ARG [WORD ...]]
 * Every command also takes --help (and -h), not listed.
 */
static void list_options(FILE *f)
{
	size_t i;

	for (i = 0; i < N_GLOBALS; i++) {
		const struct global_opt *g = &globals[i];

		fprintf(f, "global\t--%s%s%s\n", g->name, g->arg ? "\t" : "", g->arg ? g->arg : "");
		if (has_letter(g))
			fprintf(f, "global\t-%c%s%s\n", g->letter, g->arg ? "\t" : "",
				g->arg ? g->arg : "");
	}
	for (i = 0; i < N_COMMANDS; i++)
		cmd_list_options(f, commands[i]);
}

/*
 * Whether this run of @c changes state: each such run is recorded in
 * syslog, done or failed (audit.h). `rule` changes with add and del.
 */
static int changes_state(const struct cmd_spec *c, int argc, char **argv)
{
	static const char *const changing[] = { "load", "set",	 "unload", "reset", "charge",
						"gc",	"apply", "fleet",  NULL };
	int i;

	if (!strcmp(c->name, "rule"))
		return argc > 1 && (!strcmp(argv[1], "add") || !strcmp(argv[1], "del") ||
				    !strcmp(argv[1], "delete"));
	/* `lists` changes with --allow or --deny. */
	if (!strcmp(c->name, "lists")) {
		for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
			if (!strncmp(argv[i], "--allow", 7) || !strncmp(argv[i], "--deny", 6))
				return 1;
		return 0;
	}
	/* `apply --check` only reads the file. */
	if (!strcmp(c->name, "apply"))
		for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
			if (!strcmp(argv[i], "--check"))
				return 0;
	for (i = 0; changing[i]; i++)
		if (!strcmp(c->name, changing[i]))
			return 1;
	return 0;
}

/* Exact name, or an unambiguous prefix of one, as `ip` accepts. */
static const struct cmd_spec *find_command(const char *name)
{
	const struct cmd_spec *found = NULL;
	char list[256] = "";
	size_t i, n = strlen(name);
	int matches = 0;

	for (i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(commands[i]->name, name))
			return commands[i];
		if (n && !strncmp(commands[i]->name, name, n)) {
			found = commands[i];
			if (matches++)
				strcat(list, ", ");
			strcat(list, commands[i]->name);
		}
	}
	if (matches == 1)
		return found;
	if (matches > 1)
		usage_err(NULL, "ambiguous command '%s': %s", name, list);
	else
		usage_err(NULL, "unknown command '%s'", name);
	return NULL;
}

/* `help [COMMAND]` */
static int help(int argc, char **argv)
{
	const struct cmd_spec *c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_DONE;
	}
	if (argc == 2 && !strcmp(argv[1], "--options")) {
		list_options(stdout);
		return EXIT_DONE;
	}
	if (argc > 2)
		return usage_err("help", "help: unexpected argument '%s'", argv[2]);
	c = find_command(argv[1]);
	if (!c)
		return EXIT_USAGE;
	cmd_help(stdout, c);
	return EXIT_DONE;
}

int main(int argc, char **argv)
{
	struct option opts[N_GLOBALS + 1] = {};
	char letters[3 * N_GLOBALS + 3] = "+:";
	const struct cmd_spec *c;
	int opt, i, ret;
	size_t g;

	for (g = 0; g < N_GLOBALS; g++) {
		opts[g].name = globals[g].name;
		opts[g].has_arg = globals[g].has_arg;
		opts[g].val = globals[g].letter;
		if (has_letter(&globals[g]))
			snprintf(letters + strlen(letters), sizeof(letters) - strlen(letters),
				 "%c%s", globals[g].letter, globals[g].has_arg ? ":" : "");
	}
	/* Options before the command only; the command parses the rest. */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, letters, opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (!*optarg || strchr(optarg, '/')) {
				log_err("invalid -n '%s': give a namespace name (see 'ip netns list')",
					optarg);
				return EXIT_USAGE;
			}
			cli_netns = optarg;
			break;
		case 'v': log_level++; break;
		case 'h': usage(stdout); return EXIT_DONE;
		case 'V':
			printf("xdp-rl %s (libbpf %s)\n", XDP_RL_VERSION, libbpf_version_string());
			return EXIT_DONE;
		case ':': return usage_err(NULL, "option '%s' needs a value", argv[optind - 1]);
		default:
			/* A short option may sit inside a bundle ("-xv"): name it alone. */
			if (optopt > 0 && optopt < 128)
				return usage_err(NULL, "unknown option '-%c'", optopt);
			return usage_err(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	c = find_command(argv[optind]);
	if (!c)
		return EXIT_USAGE;

	if (!c->run)
		return help(argc - optind, argv + optind);
	for (i = optind + 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			cmd_help(stdout, c);
			return EXIT_DONE;
		}
	}
	/* The whole command line, before the command's getopt reorders it. */
	if (changes_state(c, argc - optind, argv + optind))
		audit_begin(argc, argv);
	argc -= optind;
	argv += optind;
	log_setup_libbpf();
	optind = 0; /* a fresh getopt scan for the command */
	ret = c->run(argc, argv);
	audit_end(ret);
	return ret;
}
