// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* config.c - a limiter described by a file (see config.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "caps.h"
#include "config.h"
#include "lists.h"
#include "live.h"
#include "log.h"
#include "rules.h"

#define CONFIG_WORDS 17 /* words on a line at most: "rule" and a rules file line's 16 */
#define GROUP_TEXT   256

/* "NAME:LINE: ..." (or "NAME: ..." for line 0) into @why; -1. */
static int fail(char *why, size_t len, const char *name, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail(char *why, size_t len, const char *name, unsigned int line, const char *fmt, ...)
{
	size_t off;
	va_list ap;

	off = line ? (size_t)snprintf(why, len, "%s:%u: ", name, line) :
		     (size_t)snprintf(why, len, "%s: ", name);
	if (off < len) {
		va_start(ap, fmt);
		vsnprintf(why + off, len - off, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * The options' messages in the file's words: "--limit" is "limit" there.
 * Only an option's name loses its dashes (after a space, '(' or '/', or at
 * the start), never a value quoted after it.
 */
static void undash(char *t)
{
	char *w = t, prev = ' ';
	const char *r = t;

	while (*r) {
		if (r[0] == '-' && r[1] == '-' && r[2] >= 'a' && r[2] <= 'z' &&
		    strchr(" (/", prev)) {
			r += 2;
			continue;
		}
		prev = *r;
		*w++ = *r++;
	}
	*w = '\0';
}

/* How many single-character edits make @a into @b, up to 3 (more: 3). */
static int edits(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	int d[24][24];

	if (la > 22 || lb > 22)
		return 3;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;

			d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	}
	return d[la][lb] < 3 ? d[la][lb] : 3;
}

/* Why @word is no setting, and what may have been meant. */
static void unknown_setting(const char *word, char *buf, size_t len)
{
	static const char *const others[] = { "interface", "rule", NULL };
	const char *best = NULL;
	const struct setting *t;
	int i, d, bestd = 3;

	if (word[0] == '-' && word[1] == '-' && setting_named(word + 2, IN_CONFIG)) {
		snprintf(buf, len, "unknown setting '%.40s': write it without its dashes, as '%s'",
			 word, word + 2);
		return;
	}
	if (!strcmp(word, "force")) {
		snprintf(buf, len,
			 "'force' is no setting: apply replaces the limiter when the file "
			 "needs it");
		return;
	}
	if (!strcmp(word, "rules")) {
		snprintf(buf, len,
			 "'rules' is no setting: give each rule on a line of its own, "
			 "'rule CIDR ...'");
		return;
	}
	for (t = settings_table; t->name; t++) {
		d = edits(word, t->name);
		if ((t->scope & IN_CONFIG) && d < bestd) {
			bestd = d;
			best = t->name;
		}
	}
	for (i = 0; others[i]; i++) {
		d = edits(word, others[i]);
		if (d < bestd) {
			bestd = d;
			best = others[i];
		}
	}
	if (best && bestd <= (strlen(word) > 4 ? 2 : 1))
		snprintf(buf, len, "unknown setting '%.40s' (did you mean '%s'?)", word, best);
	else
		snprintf(buf, len,
			 "unknown setting '%.40s' (a setting is an option of 'xdp-rl load' or "
			 "'xdp-rl set' without its dashes)",
			 word);
}

/* Why @name cannot be an interface's, or NULL (the kernel's dev_valid_name, and no control bytes). */
static const char *bad_ifname(const char *name)
{
	if (!*name)
		return "empty";
	if (strlen(name) >= IF_NAMESIZE)
		return "longer than 15 characters";
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return "not a name";
	for (; *name; name++)
		if (*name == '/' || *name == ':' || isspace((unsigned char)*name) ||
		    iscntrl((unsigned char)*name))
			return "holds '/', ':', a space or a control character";
	return NULL;
}

/*
 * The line to blame for a refusal of @opt: the last given of the settings
 * that go together with it.
 */
static unsigned int line_of(const struct config *c, int opt)
{
	static const int together[][7] = {
		{ OPT_LIMIT, OPT_WINDOW, OPT_LAYER, OPT_RATE, OPT_BURST, OPT_BYTES, 0 },
		{ OPT_PROTO, OPT_DPORT, OPT_SYN, OPT_NO_SYN, 0 },
		{ OPT_ON_FULL, OPT_NEW_SOURCES, 0 },
	};
	unsigned int line = 0, i, j, k;

	for (i = 0; i < sizeof(together) / sizeof(together[0]); i++) {
		for (j = 0; together[i][j] && together[i][j] != opt; j++)
			;
		if (!together[i][j])
			continue;
		for (k = 0; together[i][k]; k++)
			if (c->line[together[i][k] - OPT_LIMIT] > line)
				line = c->line[together[i][k] - OPT_LIMIT];
		return line;
	}
	return opt >= OPT_LIMIT && opt < OPT_END + SETTINGS_MAX ? c->line[opt - OPT_LIMIT] : 0;
}

/* The interface a file called @name is for: "/etc/xdp-rl/eth0.conf" is eth0's. */
static int ifname_of_file(const char *name, char *out, size_t len)
{
	const char *base = strrchr(name, '/');
	size_t n, s = strlen(CONFIG_SUFFIX);
	char stem[IF_NAMESIZE + 8];

	base = base ? base + 1 : name;
	n = strlen(base);
	if (n <= s || strcmp(base + n - s, CONFIG_SUFFIX) || n - s >= sizeof(stem))
		return -1;
	snprintf(stem, sizeof(stem), "%.*s", (int)(n - s), base);
	if (bad_ifname(stem))
		return -1;
	snprintf(out, len, "%s", stem);
	return 0;
}

/* One line of settings: 0 or -1 with why. */
static int parse_setting(struct config *c, char **w, int n, unsigned int no, const char *name,
			 char *why, size_t wlen)
{
	const struct setting *t = setting_named(w[0], IN_CONFIG);
	const char *arg;
	unsigned int *given;
	struct why sw;
	char text[256];

	if (!t) {
		unknown_setting(w[0], text, sizeof(text));
		return fail(why, wlen, name, no, "%s", text);
	}
	arg = t->arg ? t->arg : t->set_arg;
	if (arg && n != 2)
		return fail(why, wlen, name, no, "'%s' takes %s value: %s %s", t->name,
			    n < 2 ? "a" : "one", t->name, arg);
	if (!arg && n != 1)
		return fail(why, wlen, name, no, "'%s' takes no value", t->name);
	given = &c->line[setting_id(t) - OPT_LIMIT];
	if (t->kind != SK_LAYERS && *given)
		return fail(why, wlen, name, no, "a second '%s' (line %u has one)", t->name,
			    *given);
	if (settings_option(setting_id(t), arg ? w[1] : NULL, &c->s, &sw)) {
		undash(sw.text);
		return fail(why, wlen, name, no, "%s", sw.text);
	}
	if (!*given)
		*given = no;
	return 0;
}

int config_parse(const char *text, size_t len, const char *name, struct config *c, char *why,
		 size_t wlen)
{
	char *w[CONFIG_WORDS + 1], rwhy[256], pfx[INET6_ADDRSTRLEN + 8], nest[512];
	const struct rule_spec *dup, *first;
	unsigned int ifline = 0;
	struct lines it;
	size_t cap = 0;
	struct why sw;
	const char *e;
	int n, lines = 0;

	memset(c, 0, sizeof(*c));
	settings_init(&c->s);
	c->from_file = 1;
	lines_begin(&it, text, len);
	while ((n = lines_next(&it, w, CONFIG_WORDS, &e)) != -1) {
		if (n == -2)
			return fail(why, wlen, name, it.no, "%s", e);
		if (!n)
			continue;
		lines++;
		if (!strcmp(w[0], "rule")) {
			if (c->s.nrules == XDP_RL_MAX_RULES)
				return fail(why, wlen, name, it.no, "more than %d rules" LISTS_HINT,
					    XDP_RL_MAX_RULES, XDP_RL_MAX_PREFIXES);
			if (rules_add(&c->s.rules, &c->s.nrules, &cap))
				return fail(why, wlen, name, it.no, "out of memory");
			if (rule_parse(n, w, &c->s.rules[c->s.nrules], rwhy, sizeof(rwhy)))
				return fail(why, wlen, name, it.no, "rule: %s", rwhy);
			c->s.rules[c->s.nrules++].line = it.no;
		} else if (!strcmp(w[0], "allow-list") || !strcmp(w[0], "deny-list")) {
			int k = !strcmp(w[0], "deny-list");

			if (c->list_line[k])
				return fail(why, wlen, name, it.no,
					    "a second '%s' (line %u has one)", w[0],
					    c->list_line[k]);
			if (n != 2 || *w[1] != '/')
				return fail(why, wlen, name, it.no,
					    "'%s' takes one absolute path: %s /etc/xdp-rl/FILE",
					    w[0], w[0]);
			if (strlen(w[1]) >= sizeof(c->list_path[k]))
				return fail(why, wlen, name, it.no, "%s: a path longer than %zu",
					    w[0], sizeof(c->list_path[k]) - 1);
			snprintf(c->list_path[k], sizeof(c->list_path[k]), "%s", w[1]);
			c->list_line[k] = it.no;
		} else if (!strcmp(w[0], "interface")) {
			if (ifline)
				return fail(why, wlen, name, it.no,
					    "a second 'interface' (line %u has one)", ifline);
			if (n != 2)
				return fail(why, wlen, name, it.no,
					    "'interface' takes one value: interface IFACE");
			e = bad_ifname(w[1]);
			if (e)
				return fail(why, wlen, name, it.no, "invalid interface '%.40s': %s",
					    w[1], e);
			snprintf(c->ifname, sizeof(c->ifname), "%s", w[1]);
			ifline = it.no;
		} else if (parse_setting(c, w, n, it.no, name, why, wlen)) {
			return -1;
		}
	}
	/*
	 * Nothing in it (an empty or truncated file, a wrong path's): applied,
	 * it would put every setting back to load's default and delete every
	 * rule. Say so instead; a file that means it says one thing.
	 */
	if (!lines)
		return fail(
			why, wlen, name, 0,
			"it has no settings and no rules: applied, it would put the limiter back "
			"to load's defaults and delete its rules (to mean that, write at least "
			"one line, such as 'limit 1000')");
	dup = rules_duplicate(c->s.rules, c->s.nrules, &first);
	if (dup) {
		fmt_prefix(&dup->addr, dup->prefix, pfx, sizeof(pfx));
		return fail(why, wlen, name, dup->line, "a second rule for %s (line %u has one)",
			    pfx, first->line);
	}
	dup = rules_too_nested(c->s.rules, c->s.nrules, nest, sizeof(nest));
	if (dup)
		return fail(why, wlen, name, dup->line, "%s", nest);
	if (!ifline && ifname_of_file(name, c->ifname, sizeof(c->ifname)))
		return fail(why, wlen, name, 0,
			    "no interface: add a line 'interface IFACE' (or name the file "
			    "IFACE" CONFIG_SUFFIX ")");
	c->s.new_rules = 1;
	if (settings_finish_load(&c->s, "apply", &sw)) {
		undash(sw.text);
		return fail(why, wlen, name, sw.line ? sw.line : line_of(c, sw.opt), "%s", sw.text);
	}
	return 0;
}

int config_read(const char *path, struct config *c, const char *cmd)
{
	int stdin_ = !strcmp(path, "-"), r;
	char why[512], *text;
	size_t len;

	memset(c, 0, sizeof(*c));
	r = stdin_ ? read_all(STDIN_FILENO, RULES_FILE_MAX, &text, &len) :
		     read_as_caller(path, RULES_FILE_MAX, &text, &len);
	if (r) {
		if (errno == EINVAL)
			return usage_err(cmd, "%s: cannot read '%s': not a regular file", cmd,
					 path);
		if (errno == EFBIG)
			return usage_err(cmd, "%s: cannot read '%s': larger than %d MiB", cmd, path,
					 RULES_FILE_MAX >> 20);
		if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
			return usage_err(cmd, "%s: cannot read '%s': %m", cmd, path);
		log_err("%s: cannot read '%s': %m", cmd, path);
		return EXIT_FAIL;
	}
	r = config_parse(text, len, stdin_ ? "<stdin>" : path, c, why, sizeof(why));
	free(text);
	if (r) {
		config_free(c);
		return usage_err(cmd, "%s: %s; nothing was changed", cmd, why);
	}
	return EXIT_DONE;
}

void config_free(struct config *c)
{
	free(c->s.rules);
	c->s.rules = NULL;
	c->s.nrules = 0;
}

int config_of(const struct limiter *l, struct config *c)
{
	struct xdp_rl_list_meta m;
	int k;

	memset(c, 0, sizeof(*c));
	settings_init(&c->s);
	snprintf(c->ifname, sizeof(c->ifname), "%s", l->ifname);
	c->s.live = *limiter_live(l);
	c->s.fixed = l->cfg.fixed;
	c->s.max_layers = l->cfg.fixed.max_layers;
	if (lists_meta(l, &m))
		return -1;
	for (k = 0; k < 2; k++) {
		snprintf(c->list_path[k], sizeof(c->list_path[k]), "%s", m.path[k]);
		c->list_prefixes[k] = m.prefixes[k][0] + m.prefixes[k][1];
	}
	return rules_collect(l->fd, &c->s.rules, &c->s.nrules);
}

/* ---- printing -------------------------------------------------------------- */

/*
 * The settings in the order a file gives them: a group of lines each (a
 * setting's conf_pos, from 1; a switch and its opposite share one), told
 * apart by the diff.
 */
#define G_N SETTINGS_MAX

/* The group of setting @id. */
static int group_of(int id)
{
	return setting_by_id(id)->conf_pos - 1;
}

/* Append a line "NAME VALUE" (or "NAME") to @buf. */
static void add(char *buf, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(char *buf, const char *name, const char *fmt, ...)
{
	size_t off = strlen(buf);
	va_list ap;

	off += snprintf(buf + off, GROUP_TEXT - off, "%s%s", off ? "\n" : "", name);
	if (!fmt || off + 1 >= GROUP_TEXT)
		return;
	buf[off++] = ' ';
	buf[off] = '\0';
	va_start(ap, fmt);
	vsnprintf(buf + off, GROUP_TEXT - off, fmt, ap);
	va_end(ap);
}

/* Whether a file shows setting @t of @s. */
static int shown(const struct setting *t, const struct settings *s)
{
	switch (t->show) {
	case SHOW_ONE_LAYER: return s->live.nlayers == 1 && !xdp_rl_is_rate(&s->live.layer[0]);
	case SHOW_RATE: return s->live.nlayers == 1 && xdp_rl_is_rate(&s->live.layer[0]);
	case SHOW_LAYERS: return s->live.nlayers > 1;
	case SHOW_NEW_SOURCES: return s->live.new_sources.limit != 0;
	case SHOW_SET:
	case SHOW_MATCH: return (setting_value(t, s) & t->mask) == t->on;
	case SHOW_ALWAYS: break;
	}
	return 1;
}

/* The line(s) of setting @t of @s, appended to @buf. */
static void setting_text(const struct setting *t, const struct settings *s, char *buf)
{
	const void *at = (const char *)s + t->at;
	const struct xdp_rl_layer *l = at;
	char d[32], ports[XDP_RL_MAX_PORT_RANGES * 12 + 1];
	__u32 i;

	switch (t->kind) {
	case SK_NUMBER: add(buf, t->name, "%llu", (unsigned long long)setting_value(t, s)); break;
	case SK_DURATION:
	case SK_DUR_OFF:
		fmt_duration(setting_value(t, s), d, sizeof(d));
		add(buf, t->name, "%s", t->kind == SK_DUR_OFF && !setting_value(t, s) ? "off" : d);
		break;
	case SK_LAYERS:
		for (i = 0; i < s->live.nlayers && i < XDP_RL_MAX_LAYERS; i++) {
			fmt_duration(l[i].window_ns, d, sizeof(d));
			add(buf, t->name, "%llu/%s", (unsigned long long)l[i].limit, d);
		}
		break;
	case SK_GCRA:
		fmt_duration(l->window_ns, d, sizeof(d));
		add(buf, t->name, "%llu/%s", (unsigned long long)l->limit, d);
		break;
	case SK_RATE:
		fmt_duration(l->window_ns, d, sizeof(d));
		if (l->limit)
			add(buf, t->name, "%llu/%s", (unsigned long long)l->limit, d);
		else
			add(buf, t->name, "off");
		break;
	case SK_WORD: add(buf, t->name, "%s", word_name(t->words, setting_value(t, s))); break;
	case SK_PORTS:
		fmt_ports(at, ports, sizeof(ports));
		add(buf, t->name, "%s", ports);
		break;
	case SK_SWITCH: add(buf, t->name, NULL); break;
	case SK_COMMAND: break;
	}
}

/* Every setting of @c, in the file's words: one group of lines each. */
static void settings_text(const struct config *c, char t[G_N][GROUP_TEXT])
{
	const struct setting *r;

	memset(t, 0, sizeof(char) * G_N * GROUP_TEXT);
	for (r = settings_table; r->name; r++)
		if ((r->scope & IN_CONFIG) && r->conf_pos > 0 && r->conf_pos <= G_N &&
		    shown(r, &c->s))
			setting_text(r, &c->s, t[r->conf_pos - 1]);
}

/* What a file says of an empty group @g: the note of its setting that is off, or NULL. */
static const struct setting *unset_of(int g)
{
	const struct setting *r;

	for (r = settings_table; r->name; r++)
		if (r->conf_pos == g + 1 && r->unset)
			return r;
	return NULL;
}

void config_print(FILE *f, const struct config *c)
{
	char t[G_N][GROUP_TEXT], rule[RULE_TEXT_MAX];
	size_t i;

	settings_text(c, t);
	fprintf(f,
		"# xdp-rl config of %s: 'xdp-rl apply FILE' makes its limiter match this.\n"
		"# A setting a line, as load's options without their dashes; then the rules.\n"
		"interface %s\n",
		c->ifname, c->ifname);
	for (i = 0; i < G_N; i++) {
		if (!*t[i] && unset_of(i))
			fprintf(f, "# %s: %s\n", unset_of(i)->name, unset_of(i)->unset);
		else if (*t[i])
			fprintf(f, "%s\n", t[i]);
	}
	for (i = 0; i < 2; i++) {
		if (*c->list_path[i])
			fprintf(f, "%s-list %s\n", list_names[i], c->list_path[i]);
		else if (c->list_prefixes[i])
			fprintf(f, "# %s list: %llu prefixes from no file this limiter knows of\n",
				list_names[i], (unsigned long long)c->list_prefixes[i]);
	}
	for (i = 0; i < c->s.nrules; i++) {
		rule_format(&c->s.rules[i], rule, sizeof(rule));
		fprintf(f, "rule %s\n", rule);
	}
}

char *config_text(const struct config *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	config_print(f, c);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The lines of groups @from..@to of @t joined by ", " into @out; "no NONE" for none. */
static void joined(char t[G_N][GROUP_TEXT], int from, int to, const char *none, char *out,
		   size_t len)
{
	size_t off = 0;
	const char *p;
	int g;

	for (g = from; g <= to; g++) {
		for (p = t[g]; *p && off + 3 < len; p++) {
			if (*p == '\n' || (p == t[g] && off)) {
				out[off++] = ',';
				out[off++] = ' ';
			}
			if (*p != '\n')
				out[off++] = *p;
		}
	}
	out[off] = '\0';
	if (!off)
		snprintf(out, len, "no %s", none);
}

int config_diff_settings(const struct config *old, const struct config *new, config_diff_fn fn,
			 void *ctx)
{
	char a[G_N][GROUP_TEXT], b[G_N][GROUP_TEXT], x[G_N * GROUP_TEXT], y[G_N * GROUP_TEXT];
	char line[sizeof(x) + sizeof(y) + 16];
	/* The limits told apart while their shape stays (windows or a rate, how many); else as one. */
	int merged = !layers_same_shape(old->s.live.layer, old->s.live.nlayers, new->s.live.layer,
					new->s.live.nlayers),
	    g, to, n = 0;
	const char *none;
	int g_limit = group_of(OPT_LIMIT), g_window = group_of(OPT_WINDOW),
	    g_layers = group_of(OPT_LAYER);

	settings_text(old, a);
	settings_text(new, b);
	for (g = 0; g < G_N; g++) {
		to = merged && g == g_limit ? g_layers : g;
		if (merged && (g == g_window || g == g_layers))
			continue;
		none = unset_of(g) ? unset_of(g)->name : "setting";
		joined(a, g, to, none, x, sizeof(x));
		joined(b, g, to, none, y, sizeof(y));
		if (!strcmp(x, y))
			continue;
		snprintf(line, sizeof(line), "%s (was %s)", y, x);
		fn(line, ctx);
		n++;
	}
	return n;
}

int config_same_attach(const struct config *a, const struct config *b)
{
	const struct xdp_rl_fixed *x = &a->s.fixed, *y = &b->s.fixed;

	return x->attach != XDP_RL_ATTACH_SHARED ||
	       (x->priority == y->priority && x->pass_next == y->pass_next);
}

int config_same_tables(const struct config *a, const struct config *b)
{
	const struct xdp_rl_fixed *x = &a->s.fixed, *y = &b->s.fixed;

	return x->bytes == y->bytes && x->v4_prefix == y->v4_prefix &&
	       x->v6_prefix == y->v6_prefix && x->max_sources == y->max_sources &&
	       x->max_layers == y->max_layers && x->table == y->table && x->key == y->key;
}
