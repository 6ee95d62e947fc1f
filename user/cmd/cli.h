/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cli.h - what every command is made of: its spec (synopsis, what it does,
 * its options with their help), option parsing from that spec with
 * xdp-rl's own messages, and the checks before a command touches anything.
 *
 * Each command's spec is the one place its options are written: usage,
 * `--help`, `help --options` and the man page's synopsis come from it;
 * tests/e2e check that the man page (doc/xdp-rl.8.scd) and the
 * shell completion (completion/xdp-rl) agree with it.
 */
#ifndef XDP_RL_CLI_H
#define XDP_RL_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "options.h" /* struct opt_spec: one long option of a command */

/* One command. */
struct cmd_spec {
	const char *name;
	int (*run)(int argc, char **argv); /* NULL for `help` */
	/* Its forms, after the name; '\n' continues a form on the next line. */
	const char *const *forms;
	const char *about;	       /* what it does, before the options */
	const struct opt_spec *opts;   /* ends with { NULL }; NULL if none */
	const char *notes;	       /* after the options, or NULL */
	const struct opt_words *words; /* the words of options that take one; NULL if none */
};

/* The namespace given with -n, or NULL. */
extern const char *cli_netns;

/*
 * getopt_long over @spec's options, quiet, with xdp-rl's own message for an
 * unknown option or a missing value. Returns the option's id, -1 at the
 * end, or '?' after printing the error (exit with EXIT_USAGE).
 */
int cmd_getopt(int argc, char **argv, const struct cmd_spec *spec);

/* Positional argument @n (after the options) as @what, or a usage error. */
int cmd_positional(int argc, char **argv, const char *cmd, const char *what, int n,
		   const char **out);
/* A usage error if more than @n positional arguments are left. */
int cmd_no_more(int argc, char **argv, const char *cmd, int n);
/*
 * The PORT after a key's ADDRESS, positional argument @n, on a limiter
 * whose keys hold one (@has_port: --key src,dport or dst,dport): 0..65535
 * into *port (0 names packets whose port could not be read). Returns how
 * many arguments it took (0 if the keys hold no port), or -1 after a
 * usage error.
 */
int cmd_port(int argc, char **argv, const char *cmd, int n, int has_port, unsigned int *port);

/*
 * After a command has parsed its arguments: check the capabilities it needs
 * (caps.h) and enter the -n namespace. Prints why on failure.
 */
int cmd_prepare(unsigned int caps, const char *what);
/*
 * cmd_prepare for a command that only reads: and then, if no other command
 * holds the state lock, finish or undo what a killed command left half done
 * (lock.h: lock_settle), so that what it shows is what the datapath does.
 */
int cmd_prepare_read(unsigned int caps, const char *what);

/* `xdp-rl COMMAND --help`. */
void cmd_help(FILE *f, const struct cmd_spec *spec);
/* The lines of the command list: "  load   IFACE [--limit N] ...". */
void cmd_synopsis(FILE *f, const struct cmd_spec *spec);
/*
 * @spec's lines of `xdp-rl help --options` (main.c): the command, its
 * subcommands (forms that begin with a word) and its options, with the
 * words each option's value is one of.
 */
void cmd_list_options(FILE *f, const struct cmd_spec *spec);

#endif
