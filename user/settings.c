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

const struct word key_words[] = {
	{ "src", XDP_RL_KEY_SRC },
	{ "dst", XDP_RL_KEY_DST },
	{ "src,dport", XDP_RL_KEY_SRC_DPORT },
	{ "dst,dport", XDP_RL_KEY_DST_DPORT },
	{ NULL, 0 },
};

const struct word attach_words[] = {
	{ "auto", XDP_RL_ATTACH_AUTO },
	{ "shared", XDP_RL_ATTACH_SHARED },
	{ "alone", XDP_RL_ATTACH_ALONE },
	{ NULL, 0 },
};

const struct word pass_to_words[] = {
	{ "next", 1 },
	{ "stack", 0 },
	{ NULL, 0 },
};

const struct word mode_words[] = {
	{ "native", XDP_FLAGS_DRV_MODE },
	{ "generic", XDP_FLAGS_SKB_MODE },
	{ NULL, 0 },
};

/* The field @f of struct settings: its offset and size. */
#define FIELD(f) offsetof(struct settings, f), sizeof(((struct settings *)0)->f)
#define AT(f)	 offsetof(struct settings, f)

const struct setting settings_table[] = {
	{ "limit", OPT_LIMIT, IN_LOAD | IN_SET | IN_CONFIG, "N",
	  "packets (or bytes with --bytes) per window per source\n(default 1000)", "N",
	  "applies to the windows already open", 1, SK_NUMBER, FIELD(one.limit),
	  AT(live.layer[0].limit), 1, .min = 1, .max = XDP_RL_LIMIT_MAX, .conf_pos = 1,
	  .show = SHOW_ONE_LAYER, .form = "[--limit N]", .set_form = "[--limit N]" },

	{ "window", OPT_WINDOW, IN_LOAD | IN_SET | IN_CONFIG, "DUR",
	  "window length: a number and ns|us|ms|s|m|h|d, 1ms..366d\n(default 1s)", "DUR",
	  "applies to open windows too: each lasts DUR from when\nit began (one older than DUR is over at once)",
	  2, SK_DURATION, FIELD(one.window_ns), AT(live.layer[0].window_ns), 1,
	  .min = WINDOW_MIN_NS, .max = WINDOW_MAX_NS, .conf_pos = 2, .show = SHOW_ONE_LAYER,
	  .form = "[--window DUR | --layer N/DUR ...]",
	  .set_form = "[--window DUR | --layer N/DUR ...]" },

	{ "layer", OPT_LAYER, IN_LOAD | IN_SET | IN_CONFIG, "N/DUR",
	  "a window of N per DUR; repeat for up to 4 layers\n(100/1s, 3000/1m): a packet passes only if every layer\n"
	  "admits it; instead of --limit and --window",
	  "N/DUR", "replace every layer (as many as the limiter has room for)", 3, SK_LAYERS,
	  FIELD(live.layer), AT(live.layer), .conf_pos = 3, .show = SHOW_LAYERS },
	{ "rate", OPT_RATE, IN_LOAD | IN_SET | IN_CONFIG, "N/DUR",
	  "instead of windows, a rate: N per DUR on average, --burst\nat once; in any time t a source passes at most\n"
	  "burst + N*t/DUR (same DUR as --window)",
	  "N/DUR",
	  "a rate instead of the limits in force: from windows,\nevery source starts afresh; from a rate, each owes what it did",
	  4, SK_GCRA, FIELD(rate), AT(live.layer[0]), .conf_pos = 1, .show = SHOW_RATE,
	  .form = "\n[--rate N/DUR [--burst B]]", .set_form = "\n[--rate N/DUR] [--burst B]" },

	{ "burst", OPT_BURST, IN_LOAD | IN_SET | IN_CONFIG, "B",
	  "with --rate: what a source may send at once (default N)", "B",
	  "the burst of the rate in force (or of --rate)", 5, SK_NUMBER, FIELD(burst),
	  AT(live.layer[0].burst), .min = 1, .max = XDP_RL_LIMIT_MAX, .conf_pos = 2,
	  .show = SHOW_RATE },
	{ "per-key", OPT_PER_KEY, IN_LOAD | IN_SET | IN_CONFIG, NULL,
	  "a source's window opens at its first packet (default)", NULL,
	  "switch window alignment; every window restarts", 8, SK_SWITCH, FIELD(live.flags),
	  AT(live.flags), 1, .mask = XDP_RL_F_ALIGNED, .on = 0, .pair = OPT_ALIGNED, .conf_pos = 4,
	  .show = SHOW_MATCH, .form = "[--per-key|--aligned]",
	  .set_form = "\n[--per-key|--aligned]" },

	{ "aligned", OPT_ALIGNED, IN_LOAD | IN_SET | IN_CONFIG, NULL,
	  "windows at multiples of DUR since the Unix epoch", NULL,
	  "switch window alignment; every window restarts", 9, SK_SWITCH, FIELD(live.flags),
	  AT(live.flags), 1, .mask = XDP_RL_F_ALIGNED, .on = XDP_RL_F_ALIGNED, .pair = OPT_PER_KEY,
	  .conf_pos = 4, .show = SHOW_MATCH },
	{ "bytes", OPT_BYTES, IN_LOAD | IN_CONFIG, NULL, "count frame bytes instead of packets",
	  .kind = SK_SWITCH, FIELD(fixed.bytes), AT(fixed.bytes), .mask = 1, .on = 1,
	  .conf_pos = 12, .show = SHOW_SET, .unset = "not given, so each packet counts 1",
	  .form = "\n[--bytes]" },

	{ "v4-prefix", OPT_V4_PREFIX, IN_LOAD | IN_CONFIG, "LEN",
	  "IPv4 sources share a window per /LEN (0..32, default 32)", .kind = SK_NUMBER,
	  FIELD(fixed.v4_prefix), AT(fixed.v4_prefix), .min = 0, .max = 32, .conf_pos = 13,
	  .form = "[--v4-prefix LEN]" },

	{ "v6-prefix", OPT_V6_PREFIX, IN_LOAD | IN_CONFIG, "LEN",
	  "IPv6 sources share a window per /LEN (0..128, default 64)", .kind = SK_NUMBER,
	  FIELD(fixed.v6_prefix), AT(fixed.v6_prefix), .min = 0, .max = 128, .conf_pos = 14,
	  .form = "[--v6-prefix LEN]" },

	{ "key", OPT_KEY, IN_LOAD | IN_CONFIG, "KEY",
	  "what each budget is for: src (default), the source address;\n"
	  "dst, the destination's; src,dport or dst,dport, the address\n"
	  "and the destination port, a budget per service (rules, lists\n"
	  "and --v4-prefix/--v6-prefix apply to the address; with a\nport, --v6-prefix is at most 112)",
	  .kind = SK_WORD, FIELD(fixed.key), AT(fixed.key), .words = key_words, .conf_pos = 22,
	  .form = "\n[--key src|dst|src,dport|dst,dport]" },

	{ "max-sources", OPT_MAX_SOURCES, IN_LOAD | IN_CONFIG, "N",
	  "sources tracked per address family, the least recently\nseen evicted first (default 262144)",
	  .kind = SK_NUMBER, FIELD(fixed.max_sources), AT(fixed.max_sources),
	  .min = MAX_SOURCES_MIN, .max = MAX_SOURCES_MAX, .conf_pos = 15,
	  .form = "[--max-sources N]" },

	{ "max-layers", OPT_MAX_LAYERS, IN_LOAD | IN_CONFIG, "N",
	  "layers each source has room for, 1..4 (default: as many\nas --layer or the rules need; 80 bytes a source each, 40 with --table lru)",
	  .kind = SK_NUMBER, FIELD(max_layers), AT(fixed.max_layers), .min = 1,
	  .max = XDP_RL_MAX_LAYERS, .conf_pos = 16, .form = "\n[--max-layers N]" },

	{ "table", OPT_TABLE, IN_LOAD | IN_CONFIG, "KIND",
	  "what keeps the sources' windows: buckets (default), xdp-rl's\nown table, or lru, the kernel's LRU hash (doc/tables.md\nsays when each is the better choice)",
	  .kind = SK_WORD, FIELD(fixed.table), AT(fixed.table), .words = table_words,
	  .conf_pos = 17, .form = "[--table buckets|lru]" },

	{ "rules", OPT_RULES, IN_LOAD, "FILE",
	  "per-prefix rules, one a line, as 'xdp-rl rule add' takes\nthem after IFACE; '#' starts a comment",
	  .kind = SK_COMMAND, .form = "[--rules FILE]" },

	{ "new-sources", OPT_NEW_SOURCES, IN_LOAD | IN_SET | IN_CONFIG, "N/DUR",
	  "admit at most N new sources to the table per DUR; past\nthat, new sources are handled by --on-table-full",
	  "N/DUR|off", "as for load", 10, SK_RATE, FIELD(live.new_sources), AT(live.new_sources), 1,
	  .hint = " (or 'off')", .conf_pos = 7,
	  .form = "[--new-sources N/DUR\n[--on-table-full pass|drop|aggregate]]",
	  .set_form = "[--new-sources N/DUR|off]" },

	{ "on-table-full", OPT_ON_FULL, IN_LOAD | IN_SET | IN_CONFIG, "POLICY",
	  "pass (default), drop, or aggregate (one window per /24\nor /48, with the same layers)",
	  "P", "pass, drop or aggregate, as for load", 11, SK_WORD, FIELD(live.on_full),
	  AT(live.on_full), 1, .words = on_full_words, .conf_pos = 7, .show = SHOW_NEW_SOURCES,
	  .set_form = "[--on-table-full P]" },

	{ "proto", OPT_PROTO, IN_LOAD | IN_SET | IN_CONFIG, "P",
	  "limit only tcp, udp, icmp or icmpv6 packets (default: any);\nthe others pass untouched",
	  "P", "the packets limited, as for load; any: every protocol", 12, SK_WORD,
	  FIELD(live.select.proto), AT(live.select.proto), .words = proto_words, .conf_pos = 8,
	  .form = "[--proto P]", .set_form = "\n[--proto P|any]" },

	{ "dport", OPT_DPORT, IN_LOAD | IN_SET | IN_CONFIG, "LIST",
	  "limit only packets to these destination ports, e.g.\n80,443,8000-8100 (tcp or udp): your services' ports, so\n"
	  "that replies to the server's own connections pass",
	  "LIST", "as for load; any: every port", 13, SK_PORTS, FIELD(live.select), AT(live.select),
	  .hint = " (e.g. 80,443,8000-8100, or any)", .conf_pos = 9, .form = "[--dport LIST]",
	  .set_form = "[--dport LIST|any]" },

	{ "syn", OPT_SYN, IN_LOAD | IN_SET | IN_CONFIG, NULL,
	  "limit only TCP SYNs without ACK: new connections", NULL,
	  "limit only TCP SYNs without ACK", 14, SK_SWITCH, FIELD(live.select.syn),
	  AT(live.select.syn), .mask = 1, .on = 1, .pair = OPT_NO_SYN, .conf_pos = 10,
	  .show = SHOW_MATCH, .form = "\n[--syn]", .set_form = "[--syn|--no-syn]" },

	{ "no-syn", OPT_NO_SYN, IN_SET | IN_CONFIG,
	  .set_help = "limit every packet the other selectors take", .set_pos = 15,
	  .kind = SK_SWITCH, FIELD(live.select.syn), AT(live.select.syn), .mask = 1, .on = 0,
	  .pair = OPT_SYN, .conf_pos = 10, .show = SHOW_MATCH },
	{ "link-local", OPT_LINK_LOCAL, IN_LOAD | IN_SET | IN_CONFIG, "HOW",
	  "link-local sources (fe80::/10, 169.254.0.0/16): each keyed\nby its own address (per-address, default), by the prefix\n"
	  "as any source (prefix), or never limited (exempt)",
	  "HOW", "per-address, prefix or exempt, as for load", 16, SK_WORD, FIELD(live.link_local),
	  AT(live.link_local), .words = link_local_words, .conf_pos = 11,
	  .form = "[--link-local per-address|prefix|exempt]",
	  .set_form = "\n[--link-local per-address|prefix|exempt]" },

	{ "dry-run", OPT_DRY_RUN, IN_LOAD | IN_SET | IN_CONFIG, NULL,
	  "count what would be dropped, drop nothing", NULL, "count, drop nothing", 6, SK_SWITCH,
	  FIELD(live.flags), AT(live.flags), 1, .mask = XDP_RL_F_DRY_RUN, .on = XDP_RL_F_DRY_RUN,
	  .pair = OPT_ENFORCE, .conf_pos = 5, .show = SHOW_MATCH, .form = "[--dry-run]",
	  .set_form = "[--dry-run|--enforce]" },

	{ "enforce", OPT_ENFORCE, IN_SET | IN_CONFIG, .set_help = "drop again", .set_pos = 7,
	  .kind = SK_SWITCH, FIELD(live.flags), AT(live.flags), 1, .mask = XDP_RL_F_DRY_RUN,
	  .on = 0, .pair = OPT_DRY_RUN, .conf_pos = 5, .show = SHOW_MATCH },

	{ "ban", OPT_BAN, IN_LOAD | IN_SET | IN_CONFIG, "DUR",
	  "after a source goes over its limit, refuse all its packets\nfor DUR, 1ms..366d (default off)",
	  "DUR|off", "changes the length of bans made from now on; bans in\nforce keep their end",
	  17, SK_DUR_OFF, FIELD(live.ban_ns), AT(live.ban_ns), 1, .min = WINDOW_MIN_NS,
	  .max = XDP_RL_BAN_MAX_NS, .hint = " (or 'off')", .conf_pos = 6, .form = "[--ban DUR]",
	  .set_form = "[--ban DUR|off]" },
	{ "mode", OPT_MODE, IN_LOAD | IN_CONFIG, "MODE",
	  "native (driver, default) or generic (skb)", .kind = SK_WORD, FIELD(fixed.xdp_mode),
	  AT(fixed.xdp_mode), .words = mode_words, .conf_pos = 18,
	  .form = "\n[--mode native|generic]" },

	{ "attach", OPT_ATTACH, IN_LOAD | IN_CONFIG, "HOW",
	  "shared: through libxdp's dispatcher, beside other XDP\nprograms (xdp-filter, ...); alone: the interface's one\nprogram; auto (default): shared where the kernel runs\nthe dispatcher, else alone",
	  .kind = SK_WORD, FIELD(fixed.attach), AT(fixed.attach), .words = attach_words,
	  .conf_pos = 19, .form = "[--attach auto|shared|alone]" },

	{ "priority", OPT_PRIORITY, IN_LOAD | IN_CONFIG, "N",
	  "shared: run priority among the dispatcher's programs,\nlower first (default 50, as libxdp's)",
	  .kind = SK_NUMBER, FIELD(fixed.priority), AT(fixed.priority), .min = 0,
	  .max = XDP_RL_PRIORITY_MAX, .conf_pos = 20, .form = "[--priority N]" },

	{ "pass-to", OPT_PASS_TO, IN_LOAD | IN_CONFIG, "WHERE",
	  "shared: where a packet xdp-rl passes goes: the next\nprogram (default), or the stack, skipping the rest",
	  .kind = SK_WORD, FIELD(fixed.pass_next), AT(fixed.pass_next), .words = pass_to_words,
	  .conf_pos = 21, .form = "\n[--pass-to next|stack]" },

	{ "force", OPT_FORCE, IN_LOAD, NULL,
	  "replace a limiter already on IFACE without a gap;\nwindows are kept when the table settings are unchanged",
	  .kind = SK_COMMAND, .form = "[--force]" },
	{ NULL },
};

/* Made from settings_table at start (settings_tables). */
struct opt_spec settings_load_opts[SETTINGS_MAX + 1], settings_set_opts[SETTINGS_MAX + 1];
struct opt_words settings_words[SETTINGS_MAX + 1];
static char load_form[1024], set_form[1024];
const char *const settings_load_forms[] = { load_form, NULL };
const char *const settings_set_forms[] = { set_form, NULL };

/* Append an option's @form to the synopsis in @buf: after a space, or on a line of its own. */
static void form_add(char *buf, size_t len, const char *form)
{
	size_t off = strlen(buf);

	if (form)
		snprintf(buf + off, len - off, "%s%s", *form == '\n' ? "" : " ", form);
}

int setting_id(const struct setting *s)
{
	return s->id ? s->id : OPT_END + (int)(s - settings_table);
}

const struct setting *setting_by_id(int opt)
{
	const struct setting *s;

	for (s = settings_table; s->name; s++)
		if (setting_id(s) == opt)
			return s;
	return NULL;
}

const struct setting *setting_named(const char *name, unsigned int scope)
{
	const struct setting *s;

	for (s = settings_table; s->name; s++)
		if ((s->scope & scope) && !strcmp(s->name, name))
			return s;
	return NULL;
}

/* The commands' tables of options and words, from settings_table, before main. */
__attribute__((constructor)) static void settings_tables(void)
{
	const struct setting *s;
	int n = 0, w = 0, pos;

	strcpy(load_form, "IFACE");
	strcpy(set_form, "IFACE");
	for (s = settings_table; s->name && n < SETTINGS_MAX; s++) {
		form_add(load_form, sizeof(load_form), s->form);
		if (s->scope & IN_LOAD)
			settings_load_opts[n++] =
				(struct opt_spec){ s->name, setting_id(s), s->arg, s->help };
		if (s->words)
			settings_words[w++] = (struct opt_words){ s->name, s->words };
	}
	for (pos = 1, n = 0; n < SETTINGS_MAX; pos++) {
		for (s = settings_table; s->name && s->set_pos != pos; s++)
			;
		if (!s->name)
			break;
		settings_set_opts[n++] =
			(struct opt_spec){ s->name, setting_id(s), s->set_arg, s->set_help };
		form_add(set_form, sizeof(set_form), s->set_form);
	}
}

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	s->fixed.max_sources = DEFAULT_MAX_SOURCES;
	s->fixed.v4_prefix = DEFAULT_V4_PREFIX;
	s->fixed.v6_prefix = DEFAULT_V6_PREFIX;
	s->fixed.xdp_mode = XDP_FLAGS_DRV_MODE;
	s->fixed.attach = XDP_RL_ATTACH_AUTO;
	s->fixed.priority = XDP_RL_PRIORITY_DEFAULT;
	s->fixed.pass_next = 1;
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

/* The field of @s that row @t fills, at @off; read and written whatever its size. */
static __u64 field_get(const void *base, size_t off, size_t size)
{
	const char *p = (const char *)base + off;

	switch (size) {
	case 1: return *(const __u8 *)p;
	case 2: return *(const __u16 *)p;
	case 4: return *(const __u32 *)p;
	default: return *(const __u64 *)p;
	}
}

static void field_put(void *base, size_t off, size_t size, __u64 v)
{
	char *p = (char *)base + off;

	switch (size) {
	case 1: *(__u8 *)p = v; break;
	case 2: *(__u16 *)p = v; break;
	case 4: *(__u32 *)p = v; break;
	default: *(__u64 *)p = v; break;
	}
}

__u64 setting_value(const struct setting *t, const struct settings *s)
{
	return field_get(s, t->at, t->size);
}

static void give(struct settings *s, int opt)
{
	s->given |= 1ULL << (opt - OPT_LIMIT);
}

int settings_option(int opt, const char *arg, struct settings *s, struct why *why)
{
	const struct setting *t = setting_by_id(opt);
	const struct setting *p;
	const char *e = NULL;
	unsigned int v;
	__u64 n;

	if (!t || t->kind == SK_COMMAND)
		return 1;
	switch (t->kind) {
	case SK_NUMBER:
		e = parse_u64(arg, t->min, t->max, &n);
		if (!e)
			field_put(s, t->off, t->size, n);
		break;
	case SK_DURATION:
		e = parse_duration(arg, t->min, t->max, &n);
		if (!e)
			field_put(s, t->off, t->size, n);
		break;
	case SK_DUR_OFF:
		n = 0;
		if (strcmp(arg, "off") && strcmp(arg, "0"))
			e = parse_duration(arg, t->min, t->max, &n);
		if (!e)
			field_put(s, t->off, t->size, n);
		break;
	case SK_LAYERS:
		if (s->live.nlayers == XDP_RL_MAX_LAYERS)
			return refuse(why, opt, "at most %d --%s options", XDP_RL_MAX_LAYERS,
				      t->name);
		e = parse_layer(arg, &s->live.layer[s->live.nlayers]);
		if (!e)
			s->live.nlayers++;
		break;
	case SK_GCRA: e = parse_layer(arg, (struct xdp_rl_layer *)((char *)s + t->off)); break;
	case SK_RATE:
		if (!strcmp(arg, "off"))
			memset((char *)s + t->off, 0, t->size);
		else
			e = parse_layer(arg, (struct xdp_rl_layer *)((char *)s + t->off));
		break;
	case SK_WORD:
		e = word_parse(t->words, arg, &v);
		if (!e)
			field_put(s, t->off, t->size, v);
		break;
	case SK_PORTS: e = parse_ports(arg, (struct xdp_rl_select *)((char *)s + t->off)); break;
	case SK_SWITCH:
		p = t->pair ? setting_by_id(t->pair) : NULL;
		n = field_get(s, t->off, t->size);
		if (p && settings_given(s, opt) && (n & t->mask) != t->on)
			return refuse(why, opt, "--%s and --%s exclude each other",
				      p < t ? p->name : t->name, p < t ? t->name : p->name);
		field_put(s, t->off, t->size, (n & ~t->mask) | t->on);
		if (p)
			give(s, t->pair);
		break;
	case SK_COMMAND: return 1;
	}
	if (e)
		return refuse(why, opt, "invalid --%s '%.40s': %s%s", t->name, arg, e,
			      t->hint ? t->hint : "");
	give(s, opt);
	return 0;
}

void settings_merge(const struct settings *s, struct xdp_rl_live *next)
{
	const struct setting *t;
	struct settings to;
	__u64 v;

	to.live = *next;
	for (t = settings_table; t->name; t++) {
		if (!t->merge || !settings_given(s, setting_id(t)))
			continue;
		if (t->kind == SK_SWITCH) {
			v = field_get(&to, t->at, t->size) & ~t->mask;
			field_put(&to, t->at, t->size,
				  v | (field_get(s, t->off, t->size) & t->mask));
		} else {
			memcpy((char *)&to + t->at, (const char *)s + t->off, t->size);
		}
	}
	if (s->live.nlayers) {
		memcpy(to.live.layer, s->live.layer, sizeof(to.live.layer));
		to.live.nlayers = s->live.nlayers;
	}
	*next = to.live;
}

int settings_any(const struct settings *s, unsigned int scope)
{
	const struct setting *t;

	for (t = settings_table; t->name; t++)
		if ((t->scope & scope) && t->kind != SK_COMMAND && settings_given(s, setting_id(t)))
			return 1;
	return 0;
}

void settings_names(unsigned int scope, char *buf, size_t len)
{
	const struct opt_spec *o = scope == IN_SET ? settings_set_opts : settings_load_opts;
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; o[i].name && off < len; i++)
		if (setting_by_id(o[i].id)->kind != SK_COMMAND)
			off += snprintf(buf + off, len - off, "%s--%s",
					!i	      ? "" :
					o[i + 1].name ? ", " :
							" or ",
					o[i].name);
}

int settings_limits_given(const struct settings *s, struct why *why)
{
	int one = settings_given(s, OPT_LIMIT) || settings_given(s, OPT_WINDOW);

	if (s->live.nlayers && one)
		return refuse(why, OPT_LAYER, "give either --limit/--window or --layer, not both");
	if (settings_given(s, OPT_RATE) && (one || s->live.nlayers))
		return refuse(why, OPT_RATE,
			      "give either --rate or --%s, not both (a rate is the whole limit)",
			      s->live.nlayers ? "layer" : "limit/--window");
	return 0;
}

/* The one layer of @live becomes the rate @n per @window_ns with @burst: 0, or -1 with why. */
static int rate_put(struct xdp_rl_live *live, __u64 n, __u64 window_ns, __u64 burst, int opt,
		    struct why *why)
{
	struct xdp_rl_layer l = {};
	const char *e = rate_fill(&l, n, window_ns, burst);

	if (e)
		return refuse(why, opt, "cannot keep --rate: %s", e);
	memset(live->layer, 0, sizeof(live->layer));
	live->layer[0] = l;
	live->nlayers = 1;
	return 0;
}

int settings_rate(const struct settings *s, struct xdp_rl_live *live, struct why *why)
{
	const struct xdp_rl_layer *l = &live->layer[0];
	int rate = live->nlayers == 1 && xdp_rl_is_rate(l);
	int lim = settings_given(s, OPT_LIMIT), win = settings_given(s, OPT_WINDOW);

	if (settings_given(s, OPT_RATE))
		return rate_put(live, s->rate.limit, s->rate.window_ns,
				settings_given(s, OPT_BURST) ? s->burst : s->rate.limit, OPT_RATE,
				why);
	if (settings_given(s, OPT_BURST) && !rate)
		return refuse(why, OPT_BURST,
			      "--burst is a rate's, and the limits are windows (give --rate N/DUR "
			      "with it)");
	if (settings_given(s, OPT_BURST))
		return rate_put(live, l->limit, l->window_ns, s->burst, OPT_BURST, why);
	/* A rate's N or DUR alone would keep a burst sized for the other. */
	if (rate && lim != win)
		return refuse(why, lim ? OPT_LIMIT : OPT_WINDOW,
			      "the limit is a rate: give --rate N/DUR to change it (or both "
			      "--limit and --window to make it a window again)");
	if (rate && lim)
		live->layer[0] = (struct xdp_rl_layer){ .limit = s->one.limit,
							.window_ns = s->one.window_ns };
	return 0;
}

int settings_check_rate(const struct settings *s, const struct xdp_rl_live *live,
			const struct rules_summary *rs, struct why *why)
{
	int mine = layers_any_rate(live->layer, live->nlayers);

	if (!(live->flags & XDP_RL_F_ALIGNED) || (!mine && !rs->any_rate))
		return 0;
	if (mine)
		return refuse(why, settings_given(s, OPT_ALIGNED) ? OPT_ALIGNED : OPT_RATE,
			      "a rate has no windows to align: --rate and --aligned exclude each "
			      "other (give --per-key)");
	return refuse(why, OPT_ALIGNED,
		      "a rule limits by a rate, which has no windows to align: --aligned "
		      "excludes it (give the rule --layer N/DUR, or keep --per-key)");
}

int settings_any_rate(const struct settings *s)
{
	struct rules_summary rs = {};
	size_t i;

	for (i = 0; i < s->nrules; i++)
		rules_summary_add(&rs, &s->rules[i]);
	return rs.any_rate || layers_any_rate(s->live.layer, s->live.nlayers);
}

int settings_layers(struct settings *s, const struct xdp_rl_layer *base, struct why *why)
{
	if (settings_limits_given(s, why))
		return -1;
	if (settings_given(s, OPT_BURST) && !settings_given(s, OPT_RATE))
		return refuse(why, OPT_BURST, "--burst goes with --rate N/DUR");
	if (settings_given(s, OPT_RATE))
		return settings_rate(s, &s->live, why);
	if (s->live.nlayers)
		return 0;
	s->live.layer[0] = *base;
	if (settings_given(s, OPT_LIMIT))
		s->live.layer[0].limit = s->one.limit;
	if (settings_given(s, OPT_WINDOW))
		s->live.layer[0].window_ns = s->one.window_ns;
	s->live.nlayers = 1;
	return 0;
}

int settings_select(const struct settings *s, struct xdp_rl_live *live, struct why *why)
{
	struct xdp_rl_select sel = live->select;
	const char *e;

	if (settings_given(s, OPT_PROTO))
		sel.proto = s->live.select.proto;
	if (settings_given(s, OPT_DPORT)) {
		sel.nports = s->live.select.nports;
		memcpy(sel.port_lo, s->live.select.port_lo, sizeof(sel.port_lo));
		memcpy(sel.port_hi, s->live.select.port_hi, sizeof(sel.port_hi));
	}
	if (settings_given(s, OPT_SYN))
		sel.syn = s->live.select.syn;
	e = check_select(&sel);
	if (e)
		return refuse(why,
			      sel.syn && settings_given(s, OPT_SYN) ? OPT_SYN :
			      settings_given(s, OPT_DPORT)	    ? OPT_DPORT :
								      OPT_PROTO,
			      "%s", e);
	live->select = sel;
	if (settings_given(s, OPT_LINK_LOCAL))
		live->link_local = s->live.link_local;
	return 0;
}

/* The smallest Ethernet frame, and a full-size one, as XDP sees them (no FCS). */
#define FRAME_MIN  60
#define FRAME_FULL 1514

/* Of layer @l, what a frame must fit in: a window's limit, a rate's burst. */
static __u64 frame_room(const struct xdp_rl_layer *l)
{
	return xdp_rl_is_rate(l) ? l->burst : l->limit;
}

int settings_check_bytes(const struct xdp_rl_live *live, int bytes, const char *cmd,
			 struct why *why)
{
	const struct xdp_rl_layer *l;
	int rate;
	__u32 i;

	for (i = 0; bytes && i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		l = &live->layer[i];
		rate = xdp_rl_is_rate(l);
		if (frame_room(l) < FRAME_MIN)
			return refuse(why,
				      rate		? OPT_BURST :
				      live->nlayers > 1 ? OPT_LAYER :
							  OPT_LIMIT,
				      "a %s of %llu bytes can never pass a frame (the smallest "
				      "is %d bytes)",
				      rate ? "burst" : "limit", (unsigned long long)frame_room(l),
				      FRAME_MIN);
		if (frame_room(l) < FRAME_FULL)
			log_warn("%s: with a %s of %llu bytes%s, frames of more than %llu bytes "
				 "can never pass (a full-size frame is %d)",
				 cmd, rate ? "burst" : "limit", (unsigned long long)frame_room(l),
				 rate ? "" : " per window", (unsigned long long)frame_room(l),
				 FRAME_FULL);
	}
	return 0;
}

unsigned int settings_layers_needed(const struct settings *s)
{
	const struct rule_spec *widest = rules_widest(s->rules, s->nrules);

	return widest && widest->rule.nlayers > s->live.nlayers ? widest->rule.nlayers :
								  s->live.nlayers;
}

/* settings_check_rate of load's limits and rules: a refusal for a rule names its line. */
static int rules_check_rate(const struct settings *s, struct why *why)
{
	struct rules_summary rs = {};
	size_t i;

	for (i = 0; i < s->nrules; i++)
		rules_summary_add(&rs, &s->rules[i]);
	if (!settings_check_rate(s, &s->live, &rs, why))
		return 0;
	for (i = 0; !layers_any_rate(s->live.layer, s->live.nlayers) && i < s->nrules; i++) {
		if (layers_any_rate(s->rules[i].rule.layer, s->rules[i].rule.nlayers)) {
			why->line = s->rules[i].line;
			break;
		}
	}
	return -1;
}

int settings_finish_load(struct settings *s, const char *cmd, struct why *why)
{
	static const struct xdp_rl_layer base = { .limit = DEFAULT_LIMIT,
						  .window_ns = DEFAULT_WINDOW_NS };
	const struct rule_spec *widest;

	if (settings_layers(s, &base, why) || settings_select(s, &s->live, why) ||
	    settings_check_bytes(&s->live, s->fixed.bytes, cmd, why) || rules_check_rate(s, why))
		return -1;
	if (settings_given(s, OPT_ON_FULL) && !s->live.new_sources.limit)
		return refuse(why, OPT_ON_FULL, "--on-table-full needs --new-sources N/DUR");
	/* An IPv6 key keeps its port in the address's last 16 bits (include/xdp_rl.h). */
	if (xdp_rl_key_port(s->fixed.key) && s->fixed.v6_prefix > XDP_RL_KEY6_PORT_PREFIX)
		return refuse(why, settings_given(s, OPT_V6_PREFIX) ? OPT_V6_PREFIX : OPT_KEY,
			      "--key %s keeps the port in an IPv6 key's last 16 bits: --v6-prefix "
			      "%u leaves none (at most %u)",
			      word_name(key_words, s->fixed.key), s->fixed.v6_prefix,
			      XDP_RL_KEY6_PORT_PREFIX);
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
