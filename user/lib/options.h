/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * options.h - strict parsing of what users type: numbers, durations,
 * addresses, and the words an option takes. Each parser returns NULL on
 * success or why the text is refused. Bottom layer: depends on nothing else
 * of xdp-rl but the shared header.
 */
#ifndef XDP_RL_OPTIONS_H
#define XDP_RL_OPTIONS_H

#include <stddef.h>
#include <linux/types.h>
#include "xdp_rl.h"

#define WINDOW_MIN_NS 1000000ULL	   /* 1ms */
#define WINDOW_MAX_NS XDP_RL_WINDOW_MAX_NS /* 366 days */

struct ip_addr {
	int family;	/* AF_INET or AF_INET6 */
	__u8 bytes[16]; /* network byte order; IPv4 in the first 4 */
};

/* A decimal number in [min, max]: no sign, no spaces, no suffix. */
const char *parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* A number and a unit, ns us ms s m h: "500ms", "1s", "15m". */
const char *parse_duration(const char *s, __u64 min_ns, __u64 max_ns, __u64 *ns);
/* An IPv4 or IPv6 address. */
const char *parse_addr(const char *s, struct ip_addr *a);
/* N/DUR, e.g. 100/1s: a limit of N per window of DUR. */
const char *parse_layer(const char *s, struct xdp_rl_layer *l);
/*
 * The rate layer @l of @n per @window_ns (as parse_layer reads N/DUR) with
 * burst @burst (xdp_rl_rate_fill): NULL, or why it cannot be kept (@l
 * unchanged): a rate slower than the slowest, or a burst that takes too
 * long to earn back.
 */
const char *rate_fill(struct xdp_rl_layer *l, __u64 n, __u64 window_ns, __u64 burst);
/* ADDRESS/LEN with no bits set past LEN; a bare address is a full-length prefix. */
const char *parse_cidr(const char *s, struct ip_addr *a, unsigned int *prefix);

/*
 * One long option of a command: its name, the id option parsing returns for
 * it, the name of its value, and its help. Commands' specs (cli.h) and the
 * config file (config.h), whose settings are load's options, read the same
 * tables (settings.h). A table ends with { NULL }.
 */
struct opt_spec {
	const char *name; /* without the leading "--" */
	int id;		  /* what cmd_getopt returns for it (256 and up) */
	const char *arg;  /* the value's name ("N", "DUR"), NULL for a flag */
	const char *help; /* what it does; '\n' between lines */
};

/*
 * The words an option's value is one of (--mode: native, generic), as the
 * table its parser takes: a command lists its options' in its spec
 * (cli.h), for `xdp-rl help --options`, the shell completion and the
 * tests. A table ends with { NULL }.
 */
struct opt_words {
	const char *opt; /* the option's name, without the leading "--" */
	const struct word *words;
};

/* The option named @name in @opts (exactly, no abbreviation), or NULL. */
const struct opt_spec *opt_find(const struct opt_spec *opts, const char *name);
/* The option with id @id in @opts, or NULL. */
const struct opt_spec *opt_by_id(const struct opt_spec *opts, int id);

/*
 * The words an option takes and the values they stand for, one table used
 * both ways (parsing and printing); the last entry has a NULL name.
 */
struct word {
	const char *name;
	unsigned int val;
};

/* The value of word @s in @w; NULL, or "use a, b or c". */
const char *word_parse(const struct word *w, const char *s, unsigned int *val);
/* The word for @val in @w, or "?" if none. */
const char *word_name(const struct word *w, unsigned int val);
/* "a, b or c": every word of @w. */
void word_list(const struct word *w, char *buf, size_t len);

/* --proto: tcp, udp, icmp, icmpv6, any (IPPROTO_*, 0). */
extern const struct word proto_words[];
/*
 * --dport LIST: ports and ranges, "80,443,8000-8100" (at most
 * XDP_RL_MAX_PORT_RANGES, 1..65535), into @sel; "any" clears it.
 */
const char *parse_ports(const char *s, struct xdp_rl_select *sel);
/* The ports of @sel as --dport takes them, "80,443,8000-8100", or "any". */
void fmt_ports(const struct xdp_rl_select *sel, char *buf, size_t len);
/* "tcp dport 80,443 syn", or "all" for a selector that takes every packet. */
void fmt_select(const struct xdp_rl_select *sel, char *buf, size_t len);
/*
 * The --proto, --dport and --syn options of @sel together: a usage
 * error's text, or NULL. --syn is TCP's, and a port list needs tcp or udp.
 */
const char *check_select(const struct xdp_rl_select *sel);

/* The shortest exact spelling of a duration: 1s, 1500ms, 15m. */
void fmt_duration(__u64 ns, char *buf, size_t len);
/* addr/prefix, e.g. 198.18.0.0/24 or 2001:2::/64 */
void fmt_prefix(const struct ip_addr *a, unsigned int prefix, char *buf, size_t len);

/* Whether @a is link-local (fe80::/10, 169.254.0.0/16): --link-local says how it is keyed. */
int addr_link_local(const struct ip_addr *a);

/*
 * A key as the datapath keys it (@k: IPv4 in k[0], IPv6 in k[0..3]; @v6
 * its family) under --key @kind (include/xdp_rl.h) into its address @a and
 * port. Returns whether it holds a port: @kind has one, and it is not an
 * IPv6 link-local address kept whole, as the key's table keeps them when
 * @ll_whole (--link-local per-address, a source table).
 */
int key_decode(const __u32 k[4], int v6, __u32 kind, int ll_whole, struct ip_addr *a,
	       unsigned int *port);
/* Zero the bits of @a past @prefix. */
void mask_addr(struct ip_addr *a, unsigned int prefix);

/*
 * The lines of a file xdp-rl reads (a rules file, a config file), each split
 * into words: '#' starts a comment, spaces, tabs and CRs separate words.
 * A line holds at most LINE_MAX_LEN characters before its newline.
 */
#define LINE_MAX_LEN 1022

struct lines {
	const char *text;
	size_t len, pos;
	unsigned int no; /* the number of the line last read, from 1 */
	char buf[LINE_MAX_LEN + 2];
};

void lines_begin(struct lines *it, const char *text, size_t len);
/*
 * The words of the next line in @words[0..n), then a NULL (@words has room
 * for @max + 1): n, 0 for a line with none, -1 past the last line, or -2
 * with why in *why (a line too long, more than @max words, a NUL byte). The
 * words live in @it until the next call.
 */
int lines_next(struct lines *it, char **words, int max, const char **why);

#endif
