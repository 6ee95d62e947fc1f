// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* settings.c - the options of load and set, parsed into settings (see settings.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/if_link.h>

#include "live.h"
#include "log.h"
#include "settings.h"

const struct word link_local_words[] = {
	{ "per-address", XDP_RL_LL_ADDRESS },
	{ "prefix", XDP_RL_LL_PREFIX },
	{ "exempt", XDP_RL_LL_EXEMPT },
	{ NULL, 0 },
};

const struct word table_words[] = {
	{ "buckets", XDP_RL_TABLE_BUCKETS },
	{ "lru", XDP_RL_TABLE_LRU },
	{ NULL, 0 },
};

const struct word mode_words[] = {
	{ "native", XDP_FLAGS_DRV_MODE },
	{ "generic", XDP_FLAGS_SKB_MODE },
	{ NULL, 0 },
};

const struct opt_spec settings_load_opts[] = {
	{ "limit", OPT_LIMIT, "N",
	  "packets (or bytes with --bytes) per window per source\n(default 1000)" },
	{ "window", OPT_WINDOW, "DUR",
	  "window length: a number and ns|us|ms|s|m|h|d, 1ms..366d\n(default 1s)" },
	{ "layer", OPT_LAYER, "N/DUR",
	  "a window of N per DUR; repeat for up to 4 layers\n(100/1s, 3000/1m): a packet passes only if every layer\n"
	  "admits it; instead of --limit and --window" },
	{ "per-key", OPT_PER_KEY, NULL, "a source's window opens at its first packet (default)" },
	{ "aligned", OPT_ALIGNED, NULL, "windows at multiples of DUR since the Unix epoch" },
	{ "bytes", OPT_BYTES, NULL, "count frame bytes instead of packets" },
	{ "v4-prefix", OPT_V4_PREFIX, "LEN",
	  "IPv4 sources share a window per /LEN (0..32, default 32)" },
	{ "v6-prefix", OPT_V6_PREFIX, "LEN",
	  "IPv6 sources share a window per /LEN (0..128, default 64)" },
	{ "max-sources", OPT_MAX_SOURCES, "N",
	  "sources tracked per address family, the least recently\nseen evicted first (default 262144)" },
	{ "max-layers", OPT_MAX_LAYERS, "N",
	  "layers each source has room for, 1..4 (default: as many\nas --layer or the rules need; 64 bytes a source each, 32 with --table lru)" },
	{ "table", OPT_TABLE, "KIND",
	  "what keeps the sources' windows: buckets (default), xdp-rl's\nown table, or lru, the kernel's LRU hash (README says\nwhen each is the better choice)" },
	{ "rules", OPT_RULES, "FILE",
	  "per-prefix rules, one a line, as 'xdp-rl rule add' takes\nthem after IFACE; '#' starts a comment" },
	{ "new-sources", OPT_NEW_SOURCES, "N/DUR",
	  "admit at most N new sources to the table per DUR; past\nthat, new sources are handled by --on-table-full" },
	{ "on-table-full", OPT_ON_FULL, "POLICY",
	  "pass (default), drop, or aggregate (one window per /24\nor /48, with the same layers)" },
	{ "proto", OPT_PROTO, "P",
	  "limit only tcp, udp, icmp or icmpv6 packets (default: any);\nthe others pass untouched" },
	{ "dport", OPT_DPORT, "LIST",
	  "limit only packets to these destination ports, e.g.\n80,443,8000-8100 (tcp or udp): your services' ports, so\n"
	  "that replies to the server's own connections pass" },
	{ "syn", OPT_SYN, NULL, "limit only TCP SYNs without ACK: new connections" },
	{ "link-local", OPT_LINK_LOCAL, "HOW",
	  "link-local sources (fe80::/10, 169.254.0.0/16): each keyed\nby its own address (per-address, default), by the prefix\n"
	  "as any source (prefix), or never limited (exempt)" },
	{ "dry-run", OPT_DRY_RUN, NULL, "count what would be dropped, drop nothing" },
	{ "mode", OPT_MODE, "MODE", "native (driver, default) or generic (skb)" },
	{ "force", OPT_FORCE, NULL,
	  "replace a limiter already on IFACE without a gap;\nwindows are kept when the table settings are unchanged" },
	{ NULL },
};

const struct opt_spec settings_set_opts[] = {
	{ "limit", OPT_LIMIT, "N", "applies to the windows already open" },
	{ "window", OPT_WINDOW, "DUR",
	  "applies to windows opened from now on; an open window\nthat would end more than DUR + 1s from now ends at once" },
	{ "layer", OPT_LAYER, "N/DUR",
	  "replace every layer (as many as the limiter has room for)" },
	{ "dry-run", OPT_DRY_RUN, NULL, "count, drop nothing" },
	{ "enforce", OPT_ENFORCE, NULL, "drop again" },
	{ "per-key", OPT_PER_KEY, NULL, "switch window alignment; every window restarts" },
	{ "aligned", OPT_ALIGNED, NULL, "switch window alignment; every window restarts" },
	{ "new-sources", OPT_NEW_SOURCES, "N/DUR|off", "as for load" },
	{ "on-table-full", OPT_ON_FULL, "P", "pass, drop or aggregate, as for load" },
	{ "proto", OPT_PROTO, "P", "the packets limited, as for load; any: every protocol" },
	{ "dport", OPT_DPORT, "LIST", "as for load; any: every port" },
	{ "syn", OPT_SYN, NULL, "limit only TCP SYNs without ACK" },
	{ "no-syn", OPT_NO_SYN, NULL, "limit every packet the other selectors take" },
	{ "link-local", OPT_LINK_LOCAL, "HOW", "per-address, prefix or exempt, as for load" },
	{ NULL },
};

/* The words of load's and set's options that take one: the tables settings_option parses with. */
const struct opt_words settings_words[] = {
	{ "on-table-full", on_full_words },
	{ "proto", proto_words },
	{ "link-local", link_local_words },
	{ "mode", mode_words },
	{ "table", table_words }, /* load only, as mode */
	{ NULL },
};

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	s->fixed.max_sources = DEFAULT_MAX_SOURCES;
	s->fixed.v4_prefix = DEFAULT_V4_PREFIX;
	s->fixed.v6_prefix = DEFAULT_V6_PREFIX;
	s->fixed.xdp_mode = XDP_FLAGS_DRV_MODE;
}

/* Refuse @opt: -1, with why. */
static int refuse(struct why *why, int opt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct why *why, int opt, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->text, sizeof(why->text), fmt, ap);
	va_end(ap);
	why->opt = opt;
	why->line = 0;
	return -1;
}

/* One of a pair of opposite options (@on sets @flag): both is refused. */
static int either(struct settings *s, int *given, __u32 flag, int opt, int on, const char *pair,
		  struct why *why)
{
	if (*given && !!(s->live.flags & flag) != on)
		return refuse(why, opt, "%s exclude each other", pair);
	if (on)
		s->live.flags |= flag;
	*given = 1;
	return 0;
}

/* A number option in [@min, @max] into *@out. */
static int number(int opt, const char *name, const char *arg, __u64 min, __u64 max, __u64 *out,
		  struct why *why)
{
	const char *e = parse_u64(arg, min, max, out);

	return e ? refuse(why, opt, "invalid --%s '%.40s': %s", name, arg, e) : 0;
}

int settings_option(int opt, const char *arg, struct settings *s, struct why *why)
{
	unsigned int v;
	const char *e;
	__u64 n;

	switch (opt) {
	case OPT_LIMIT:
		s->has_limit = 1;
		return number(opt, "limit", arg, 1, XDP_RL_LIMIT_MAX, &s->one.limit, why);
	case OPT_WINDOW:
		e = parse_duration(arg, WINDOW_MIN_NS, WINDOW_MAX_NS, &s->one.window_ns);
		if (e)
			return refuse(why, opt, "invalid --window '%.40s': %s", arg, e);
		s->has_window = 1;
		return 0;
	case OPT_LAYER:
		if (s->live.nlayers == XDP_RL_MAX_LAYERS)
			return refuse(why, opt, "at most %d --layer options", XDP_RL_MAX_LAYERS);
		e = parse_layer(arg, &s->live.layer[s->live.nlayers]);
		if (e)
			return refuse(why, opt, "invalid --layer '%.40s': %s", arg, e);
		s->live.nlayers++;
		return 0;
	case OPT_PER_KEY:
	case OPT_ALIGNED:
		return either(s, &s->has_align, XDP_RL_F_ALIGNED, opt, opt == OPT_ALIGNED,
			      "--per-key and --aligned", why);
	case OPT_DRY_RUN:
	case OPT_ENFORCE:
		return either(s, &s->has_dry, XDP_RL_F_DRY_RUN, opt, opt == OPT_DRY_RUN,
			      "--dry-run and --enforce", why);
	case OPT_NEW_SOURCES:
		s->has_new = 1;
		if (!strcmp(arg, "off")) {
			memset(&s->live.new_sources, 0, sizeof(s->live.new_sources));
			return 0;
		}
		e = parse_layer(arg, &s->live.new_sources);
		if (e)
			return refuse(why, opt, "invalid --new-sources '%.40s': %s (or 'off')", arg,
				      e);
		return 0;
	case OPT_PROTO:
		e = word_parse(proto_words, arg, &v);
		if (e)
			return refuse(why, opt, "invalid --proto '%.40s': %s", arg, e);
		s->live.select.proto = v;
		s->has_proto = 1;
		return 0;
	case OPT_DPORT:
		e = parse_ports(arg, &s->live.select);
		if (e)
			return refuse(why, opt,
				      "invalid --dport '%.40s': %s (e.g. 80,443,8000-8100, or any)",
				      arg, e);
		s->has_dport = 1;
		return 0;
	case OPT_SYN:
	case OPT_NO_SYN:
		if (s->has_syn && s->live.select.syn != (opt == OPT_SYN))
			return refuse(why, opt, "--syn and --no-syn exclude each other");
		s->live.select.syn = opt == OPT_SYN;
		s->has_syn = 1;
		return 0;
	case OPT_LINK_LOCAL:
		e = word_parse(link_local_words, arg, &v);
		if (e)
			return refuse(why, opt, "invalid --link-local '%.40s': %s", arg, e);
		s->live.link_local = v;
		s->has_link_local = 1;
		return 0;
	case OPT_ON_FULL:
		e = word_parse(on_full_words, arg, &s->live.on_full);
		if (e)
			return refuse(why, opt, "invalid --on-table-full '%.40s': %s", arg, e);
		s->has_on_full = 1;
		return 0;
	case OPT_BYTES: s->fixed.bytes = 1; return 0;
	case OPT_V4_PREFIX:
		if (number(opt, "v4-prefix", arg, 0, 32, &n, why))
			return -1;
		s->fixed.v4_prefix = n;
		return 0;
	case OPT_V6_PREFIX:
		if (number(opt, "v6-prefix", arg, 0, 128, &n, why))
			return -1;
		s->fixed.v6_prefix = n;
		return 0;
	case OPT_MAX_SOURCES:
		return number(opt, "max-sources", arg, MAX_SOURCES_MIN, MAX_SOURCES_MAX,
			      &s->fixed.max_sources, why);
	case OPT_MAX_LAYERS:
		if (number(opt, "max-layers", arg, 1, XDP_RL_MAX_LAYERS, &n, why))
			return -1;
		s->max_layers = n;
		return 0;
	case OPT_TABLE:
		e = word_parse(table_words, arg, &s->fixed.table);
		if (e)
			return refuse(why, opt, "invalid --table '%.40s': %s", arg, e);
		return 0;
	case OPT_MODE:
		e = word_parse(mode_words, arg, &s->fixed.xdp_mode);
		if (e)
			return refuse(why, opt, "invalid --mode '%.40s': %s", arg, e);
		return 0;
	}
	return 1;
}

int settings_layers(struct settings *s, const struct xdp_rl_layer *base, struct why *why)
{
	if (s->live.nlayers && (s->has_limit || s->has_window))
		return refuse(why, OPT_LAYER, "give either --limit/--window or --layer, not both");
	if (s->live.nlayers)
		return 0;
	s->live.layer[0] = *base;
	if (s->has_limit)
		s->live.layer[0].limit = s->one.limit;
	if (s->has_window)
		s->live.layer[0].window_ns = s->one.window_ns;
	s->live.nlayers = 1;
	return 0;
}

int settings_select(const struct settings *s, struct xdp_rl_live *live, struct why *why)
{
	struct xdp_rl_select sel = live->select;
	const char *e;

	if (s->has_proto)
		sel.proto = s->live.select.proto;
	if (s->has_dport) {
		sel.nports = s->live.select.nports;
		memcpy(sel.port_lo, s->live.select.port_lo, sizeof(sel.port_lo));
		memcpy(sel.port_hi, s->live.select.port_hi, sizeof(sel.port_hi));
	}
	if (s->has_syn)
		sel.syn = s->live.select.syn;
	e = check_select(&sel);
	if (e)
		return refuse(why,
			      sel.syn && s->has_syn ? OPT_SYN :
			      s->has_dport	    ? OPT_DPORT :
						      OPT_PROTO,
			      "%s", e);
	live->select = sel;
	if (s->has_link_local)
		live->link_local = s->live.link_local;
	return 0;
}

/* The smallest Ethernet frame, and a full-size one, as XDP sees them (no FCS). */
#define FRAME_MIN  60
#define FRAME_FULL 1514

int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd,
			 struct why *why)
{
	__u32 i;

	for (i = 0; bytes && i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		if (live->layer[i].limit < FRAME_MIN)
			return refuse(why, live->nlayers > 1 ? OPT_LAYER : OPT_LIMIT,
				      "a limit of %llu bytes can never pass a frame (the smallest "
				      "is %d bytes)",
				      (unsigned long long)live->layer[i].limit, FRAME_MIN);
		if (live->layer[i].limit < FRAME_FULL)
			log_warn("%s: with a limit of %llu bytes per window, frames of more than "
				 "%llu bytes can never pass (a full-size frame is %d)",
				 cmd, (unsigned long long)live->layer[i].limit,
				 (unsigned long long)live->layer[i].limit, FRAME_FULL);
	}
	return 0;
}

unsigned int settings_layers_needed(const struct settings *s)
{
	const struct rule_spec *widest = rules_widest(s->rules, s->nrules);

	return widest && widest->rule.nlayers > s->live.nlayers ? widest->rule.nlayers :
								  s->live.nlayers;
}

int settings_finish_load(struct settings *s, const char *cmd, struct why *why)
{
	static const struct xdp_rl_layer base = { DEFAULT_LIMIT, DEFAULT_WINDOW_NS };
	const struct rule_spec *widest;

	if (settings_layers(s, &base, why) || settings_select(s, &s->live, why) ||
	    settings_check_bytes(&s->live, s->fixed.bytes, cmd, why))
		return -1;
	if (s->has_on_full && !s->live.new_sources.limit)
		return refuse(why, OPT_ON_FULL, "--on-table-full needs --new-sources N/DUR");
	/*
	 * Room per source: --max-layers, or the most layers asked for, by the
	 * limits or by a per-source rule (or, on a replacement that keeps the
	 * limiter's rules, by a rule kept: the loader checks those).
	 */
	if (s->max_layers && s->max_layers < s->live.nlayers)
		return refuse(why, OPT_MAX_LAYERS,
			      "--max-layers %u is less than the %u layers asked for", s->max_layers,
			      s->live.nlayers);
	widest = rules_widest(s->rules, s->nrules);
	if (widest && s->max_layers && s->max_layers < widest->rule.nlayers) {
		refuse(why, OPT_RULES, "the rule has %u layers, more than --max-layers %u",
		       widest->rule.nlayers, s->max_layers);
		why->line = widest->line;
		return -1;
	}
	s->fixed.max_layers = s->max_layers ? s->max_layers : settings_layers_needed(s);
	return 0;
}
