// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * apply.c - a running limiter made to match a config (see apply.h).
 *
 * The steps of an apply. Each is a kill point of its own (fault.h), and
 * the first is always the journal (journal.h), so that from then on the
 * next command finishes it:
 *
 *   the same      "nothing to change": no step at all.
 *   no limiter    journal; load (loader.h: one commit); remove the journal.
 *   new tables    journal; replace, as load --force does (one commit, the
 *                 program swap), with the file's rules unless they are the
 *                 limiter's own, which it keeps; remove the journal.
 *   else          journal;
 *                 delete the rules the file does not have, and those it
 *                 changes in a way their windows cannot survive (each
 *                 delete a commit);
 *                 publish the settings, once (limiter.h: spare slot, flip),
 *                 with limit sets for the rules to add and rule counts that
 *                 count them already;
 *                 change the rules that keep their windows in place (one
 *                 map update each, which packets see whole);
 *                 add the file's new rules;
 *                 publish again only if the rules now in force moved the
 *                 clock or the longest window from what was published;
 *                 remove the journal.
 *
 * Rule counts are never too low for the rules in the tries (a count too
 * low would hide a rule from the datapath): they drop only in the publish,
 * after the deletes, and rise in it before the adds, as rule del and rule
 * add do (rules.h: rules_publish). A rule whose limits change but not its
 * shape (action, --shared, number of layers, each a window or a rate) keeps its id and limit set,
 * so its sources keep their windows, as `set` keeps the global limits';
 * one whose shape changes is deleted and added: its sources start afresh.
 *
 * Recovery: taking the state lock (lock.h) runs limiter.c's recovery of
 * the pinned folders, then, if this namespace has a journal, applies it
 * again (apply_recover).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "apply.h"
#include "bpffs.h"
#include "fault.h"
#include "fleet.h"
#include "journal.h"
#include "limiter.h"
#include "lists.h"
#include "live.h"
#include "loader.h"
#include "log.h"
#include "rules.h"

/* What an apply changed, a line each, printed when it is done. */
struct report {
	FILE *f;
	char *buf;
	size_t len;
	const char *ifname;
};

static int report_open(struct report *r, const char *ifname)
{
	r->buf = NULL;
	r->len = 0;
	r->ifname = ifname;
	r->f = open_memstream(&r->buf, &r->len);
	if (!r->f)
		log_err("cannot apply to '%s': out of memory", ifname);
	return r->f ? 0 : -1;
}

static void say(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * apply --check against a running limiter: every step says what it would
 * do and does nothing (apply_preview).
 */
static int preview;
/* The file's lists differ from the limiter's (lists_step): something to change. */
static int lists_changed;

static void say(struct report *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(r->f, "xdp-rl: %s: %s", r->ifname, preview ? "would be: " : "");
	va_start(ap, fmt);
	vfprintf(r->f, fmt, ap);
	va_end(ap);
	fputc('\n', r->f);
}

static void say_setting(const char *what, void *ctx)
{
	say(ctx, "%s", what);
}

/* Print the report to @out (if any) and free it. */
static void report_close(struct report *r, FILE *out)
{
	fclose(r->f);
	if (out && r->buf)
		fputs(r->buf, out);
	free(r->buf);
}

/* The rules an apply deletes, changes in place and adds. */
struct plan {
	struct rule_spec *del, *upd, *add;
	size_t ndel, nupd, nadd;
};

static void plan_free(struct plan *p)
{
	free(p->del);
	free(p->upd);
	free(p->add);
}

/*
 * Whether a rule changed from @o to @n keeps its id (its counters), limit
 * set and windows: the same shape of limits and the same selector, or no
 * limits before and after.
 */
static int in_place(const struct rule_spec *o, const struct rule_spec *n)
{
	if (o->rule.action != XDP_RL_RULE_LIMIT && n->rule.action != XDP_RL_RULE_LIMIT)
		return 1;
	/* A new selector: its windows counted other packets. */
	return o->rule.action == n->rule.action && o->rule.flags == n->rule.flags &&
	       layers_same_shape(o->rule.layer, o->rule.nlayers, n->rule.layer, n->rule.nlayers) &&
	       !memcmp(&o->rule.select, &n->rule.select, sizeof(o->rule.select));
}

/* The options of a rule_format() text, past its prefix. */
static const char *options_of(const char *text)
{
	const char *sp = strchr(text, ' ');

	return sp ? sp + 1 : "";
}

/* Compare the rules of @cur and @c (both sorted by prefix); what changes into @p, and @r. */
static int plan_rules(const struct config *cur, const struct config *c, struct plan *p,
		      struct report *r)
{
	const struct rule_spec *o, *t;
	char a[RULE_TEXT_MAX], b[RULE_TEXT_MAX];
	size_t i = 0, j = 0, n = cur->s.nrules + c->s.nrules + 1;
	struct rule_spec u;
	int cmp;

	memset(p, 0, sizeof(*p));
	p->del = calloc(n, sizeof(*p->del));
	p->upd = calloc(n, sizeof(*p->upd));
	p->add = calloc(n, sizeof(*p->add));
	if (!p->del || !p->upd || !p->add) {
		log_err("cannot apply to '%s': out of memory", c->ifname);
		return -1;
	}
	while (i < cur->s.nrules || j < c->s.nrules) {
		o = i < cur->s.nrules ? &cur->s.rules[i] : NULL;
		t = j < c->s.nrules ? &c->s.rules[j] : NULL;
		cmp = !o ? 1 : !t ? -1 : rule_prefix_cmp(o, t);
		if (o)
			rule_format(o, a, sizeof(a));
		if (t)
			rule_format(t, b, sizeof(b));
		if (o && cmp < 0) {
			p->del[p->ndel++] = *o;
			say(r, "deleted rule %s", a);
		} else if (t && cmp > 0) {
			p->add[p->nadd++] = *t;
			say(r, "added rule %s", b);
		} else if (!o || !t) {
			break; /* not reached: one of them is there, and cmp says which */
		} else if (!rule_same(o, t) && in_place(o, t)) {
			u = *t;
			u.rule.id = o->rule.id;
			u.rule.lsid = o->rule.lsid;
			p->upd[p->nupd++] = u;
			say(r, "changed rule %s (was %s)", b, options_of(a));
		} else if (!rule_same(o, t)) {
			p->del[p->ndel++] = *o;
			p->add[p->nadd++] = *t;
			say(r, "replaced rule %s (was %s)%s", b, options_of(a),
			    t->rule.action == XDP_RL_RULE_LIMIT ? ": its sources start afresh" :
								  "");
		}
		i += cmp <= 0;
		j += cmp >= 0;
	}
	return 0;
}

/* Journal @c as the target of the apply about to start. */
static int journal_target(const struct config *c)
{
	size_t len;
	char *text = config_text(c, &len);
	int r;

	if (!text) {
		log_err("cannot apply to '%s': cannot write the journal: out of memory", c->ifname);
		return -1;
	}
	r = journal_write(text, len);
	free(text);
	return r;
}

/* Whether a limiter is pinned for @ifindex in this namespace. */
static int pinned(unsigned int ifindex)
{
	char ns[PATH_MAX], dir[PATH_MAX + 16];
	struct stat st;

	if (state_dir(ns, sizeof(ns), 0))
		return 0;
	snprintf(dir, sizeof(dir), "%s/%u", ns, ifindex);
	return !lstat(dir, &st);
}

/* "deny list: 3 prefixes (2 IPv4, 1 IPv6) from FILE (was 0)" of @pl, for a report. */
static void list_line(char *buf, size_t len, int kind, const struct prefix_list *pl,
		      const struct xdp_rl_list_meta *was)
{
	int off = snprintf(buf, len, "%s list: %zu prefix%s (%llu IPv4, %llu IPv6)%s%s",
			   list_names[kind], pl->n, pl->n == 1 ? "" : "es",
			   (unsigned long long)pl->count[0], (unsigned long long)pl->count[1],
			   *pl->path ? " from " : "", pl->path);

	if (was && off > 0 && (size_t)off < len)
		snprintf(buf + off, len - off, " (was %llu%s%s)",
			 (unsigned long long)(was->prefixes[kind][0] + was->prefixes[kind][1]),
			 *was->path[kind] ? " from " : "", was->path[kind]);
}

/* Put @pl in force on the limiter just loaded on @c->ifname, saying so on @out. */
static int load_lists(const struct config *c, const struct prefix_list *pl, FILE *out)
{
	struct limiter l;
	char line[2 * XDP_RL_LIST_PATH + 128];
	int k, r;

	if (!pl[0].n && !pl[1].n)
		return EXIT_DONE;
	if (limiter_open(c->ifname, &l, "cannot apply to"))
		return EXIT_FAIL;
	r = lists_replace(&l, &pl[0], &pl[1]) ? EXIT_FAIL : EXIT_DONE;
	limiter_close(&l);
	for (k = 0; out && r == EXIT_DONE && k < LIST_KINDS; k++) {
		list_line(line, sizeof(line), k, &pl[k], NULL);
		if (pl[k].n)
			fprintf(out, "xdp-rl: %s: %s\n", c->ifname, line);
	}
	return r;
}

/* No limiter: load one, and put its lists (@pl, NULL: none) in. */
static int load_new(struct config *c, FILE *out, const struct prefix_list *pl)
{
	struct settings s = c->s;
	struct load_result res;
	int r;

	if (journal_target(c))
		return EXIT_FAIL;
	s.force = 0;
	s.new_rules = 1;
	r = limiter_load(c->ifname, &s, &res);
	if (r == EXIT_DONE && out && !res.unfinished)
		load_report(out, c->ifname, &s, &res);
	/* Loaded without its lists: the journal stays, and the next command tries again. */
	if (r == EXIT_DONE && pl && load_lists(c, pl, out) != EXIT_DONE)
		return EXIT_FAIL;
	/* Done, or failed before its commit: either way nothing is left to finish. */
	journal_remove();
	return r;
}

/*
 * A file that keeps none of the limiter's rules deletes them all: said
 * aloud, as a truncated file would (apply --check shows it first).
 */
static void warn_all_deleted(const struct config *cur, const struct config *c, const struct plan *p)
{
	if (!preview && cur->s.nrules && !c->s.nrules && p->ndel == cur->s.nrules)
		log_warn("%s: the file has no rules: it deletes every rule of '%s' (%zu) "
			 "('apply --check FILE' shows what a file would change)",
			 c->ifname, c->ifname, cur->s.nrules);
}

static int run(struct config *c, FILE *out, int undo);

/* New source tables: a replacement, as load --force. */
static int replace(const struct config *cur, struct config *c, struct report *rep)
{
	struct settings s = c->s;
	struct load_result res;
	struct plan p;
	int r, same_rules;

	config_diff_settings(cur, c, say_setting, rep);
	if (plan_rules(cur, c, &p, rep)) {
		plan_free(&p);
		return EXIT_FAIL;
	}
	same_rules = !p.ndel && !p.nupd && !p.nadd;
	warn_all_deleted(cur, c, &p);
	plan_free(&p);
	if (preview) {
		say(rep, "replaced under its link: every window restarted (its source tables "
			 "change)");
		return EXIT_DONE;
	}
	if (journal_target(c))
		return EXIT_FAIL;
	/*
	 * The rules it keeps keep their counters and budgets: the replacement
	 * takes the old rules whole, and the rules that differ are changed
	 * after it, as without a replacement (the journal covers both). Only
	 * when the new tables have no room for a kept rule's layers does it
	 * start from the file's rules, fresh.
	 */
	s.force = 1;
	s.new_rules = 0;
	r = limiter_load(c->ifname, &s, &res);
	if (r != EXIT_DONE && !same_rules) {
		s.new_rules = 1;
		r = limiter_load(c->ifname, &s, &res);
	}
	if (r == EXIT_DONE)
		say(rep,
		    "replaced the limiter under its link: every window restarted (its source "
		    "tables changed); the rules it keeps, their counters and budgets were kept");
	if (r == EXIT_DONE && !same_rules && !s.new_rules) {
		fflush(rep->f);
		r = run(c, NULL, 0); /* the rules that differ, reported above */
	}
	journal_remove();
	return r;
}

static int run(struct config *c, FILE *out, int undo);

/* The rules of @p, their settings and the rule counts, into the running @l: see the top. */
static int change(struct limiter *l, struct config *cur, struct config *c, struct report *rep,
		  int undo)
{
	const struct xdp_rl_live *was = limiter_live(l);
	struct rules_summary rs, now;
	struct xdp_rl_live next;
	static rule_ids used;
	char desc[RULE_TEXT_MAX];
	int nsettings, relayer, shape, step = 0;
	struct plan p;
	size_t i;

	nsettings = config_diff_settings(cur, c, say_setting, rep);
	/*
	 * A new number of layers, a change between windows and a rate, or a
	 * new selector restarts the limits' windows, as set does.
	 */
	shape = layers_same_shape(c->s.live.layer, c->s.live.nlayers, was->layer, was->nlayers);
	relayer = !shape || memcmp(&c->s.live.select, &was->select, sizeof(was->select));
	if ((was->flags ^ c->s.live.flags) & XDP_RL_F_ALIGNED)
		say(rep, "every window restarted (per-key and aligned keep time on different "
			 "clocks)");
	else if (c->s.live.nlayers != was->nlayers)
		say(rep, "every source starts afresh under the new number of layers");
	else if (!shape)
		say(rep, "every source starts afresh: the limit changed between windows and a "
			 "rate");
	else if (relayer)
		say(rep, "every source starts afresh under the new selector (its counts were of "
			 "other packets)");
	if (plan_rules(cur, c, &p, rep))
		goto refused;
	if (!nsettings && !p.ndel && !p.nupd && !p.nadd) {
		if (!lists_changed)
			say(rep, "nothing to change");
		plan_free(&p);
		return preview || !journal_remove() ? EXIT_DONE : EXIT_FAIL;
	}
	warn_all_deleted(cur, c, &p);
	if (preview) {
		plan_free(&p);
		return EXIT_DONE;
	}
	if (l->cfg.next_lsid + p.nadd + relayer > XDP_RL_LSID_MAX) {
		log_err("cannot apply to '%s': it has used every limit set id (unload it and "
			"apply again)",
			c->ifname);
		goto refused;
	}

	/* From here on, a kill is finished by the next command. */
	if (journal_target(c))
		goto refused;
	step = 1;
	for (i = 0; i < p.ndel; i++) {
		if (rule_delete(l->fd, &p.del[i]) && errno != ENOENT) {
			rule_format(&p.del[i], desc, sizeof(desc));
			log_err("cannot apply to '%s': cannot delete rule %s: %m", c->ifname, desc);
			goto failed;
		}
		fault_point("apply: rule deleted");
	}

	/* The settings: what runs, with the file's limits, alignment and selector. */
	next = *was;
	memcpy(next.layer, c->s.live.layer, sizeof(next.layer));
	next.nlayers = c->s.live.nlayers;
	next.flags = (next.flags & ~(XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN)) |
		     (c->s.live.flags & (XDP_RL_F_ALIGNED | XDP_RL_F_DRY_RUN));
	next.new_sources = c->s.live.new_sources;
	next.on_full = c->s.live.on_full;
	next.select = c->s.live.select;
	next.link_local = c->s.live.link_local;
	next.ban_ns = c->s.live.ban_ns;
	/* A new shape of limits is a new limit set (I3, bpf/window.h), as for set. */
	if (relayer)
		next.lsid = l->cfg.next_lsid++;
	rules_count(l->fd, &next.nrules4, &next.nrules6);
	rules_summarize(l->fd, NULL, &rs);
	for (i = 0; i < p.nadd; i++) {
		p.add[i].rule.lsid = l->cfg.next_lsid++;
		*(p.add[i].addr.family == AF_INET6 ? &next.nrules6 : &next.nrules4) += 1;
		rules_summary_add(&rs, &p.add[i]);
	}
	for (i = 0; i < p.nupd; i++)
		rules_summary_add(&rs, &p.upd[i]);
	live_finish(&next, &rs, was, p.ndel || p.nupd || p.nadd);
	if (limiter_publish(l, &next)) {
		log_err("cannot apply to '%s': cannot publish the settings: %m", c->ifname);
		goto failed;
	}

	for (i = 0; i < p.nupd; i++) {
		if (rule_update(l->fd, &p.upd[i])) {
			rule_format(&p.upd[i], desc, sizeof(desc));
			log_err("cannot apply to '%s': cannot change rule %s: %m", c->ifname, desc);
			goto failed;
		}
		fault_point("apply: rule changed");
	}
	rule_ids_used(l->fd, used);
	for (i = 0; i < p.nadd; i++) {
		if (rule_insert(l->fd, &p.add[i], used, l)) {
			rule_format(&p.add[i], desc, sizeof(desc));
			log_err("cannot apply to '%s': cannot add rule %s: %m", c->ifname, desc);
			goto failed;
		}
		fault_point("apply: rule added");
	}
	/* Rules changed in place may have moved the clock or the longest window. */
	rules_summarize(l->fd, NULL, &now);
	if (memcmp(&now, &rs, sizeof(now))) {
		next = *limiter_live(l);
		live_finish(&next, &now, limiter_live(l), 1);
		if (limiter_publish(l, &next)) {
			log_err("cannot apply to '%s': cannot publish the settings: %m", c->ifname);
			goto failed;
		}
	}
	plan_free(&p);
	return journal_remove() ? EXIT_FAIL : EXIT_DONE;

failed:
	/* Half way: put back the limiter as it was, by the same steps (journalled). */
	if (undo && step) {
		if (run(cur, NULL, 0) == EXIT_DONE)
			log_err("put the limiter on '%s' back as it was: nothing was changed",
				c->ifname);
		else
			log_err("cannot put the limiter on '%s' back as it was (the next xdp-rl "
				"command tries again)",
				c->ifname);
	}
refused:
	plan_free(&p);
	return EXIT_FAIL;
}

/* The lists @c names (a file's config), read into @pl: 0, or -1 after saying why. */
int apply_read_lists(const struct config *c, struct prefix_list *pl)
{
	char why[512];
	int k;

	memset(pl, 0, LIST_KINDS * sizeof(*pl));
	for (k = 0; k < LIST_KINDS; k++) {
		if (!*c->list_path[k])
			continue;
		if (list_read_file(c->list_path[k], &pl[k], why, sizeof(why))) {
			log_err("cannot apply to '%s': %s-list %s", c->ifname, list_names[k], why);
			list_free(&pl[0]);
			return -1;
		}
	}
	return 0;
}

/*
 * The lists step of an apply to the running @l: put @pl in force if the
 * lists differ (said on @rep), holding the old ones in *@held to put back.
 * The journal covers it: a kill after is finished by the next command.
 * EXIT_DONE, or EXIT_FAIL after saying why.
 */
static int lists_step(struct limiter *l, const struct config *c, const struct prefix_list *pl,
		      struct report *rep, int *held, struct xdp_rl_list_meta *was)
{
	char line[2 * XDP_RL_LIST_PATH + 128];
	int k;

	if (lists_hold(l, held, was)) {
		log_err("cannot apply to '%s': cannot read its lists: %m", c->ifname);
		return EXIT_FAIL;
	}
	lists_changed = !lists_same(was, &pl[0], &pl[1]);
	for (k = 0; lists_changed && k < LIST_KINDS; k++) {
		if (pl[k].hash == was->hash[k] && !strcmp(pl[k].path, was->path[k]))
			continue;
		list_line(line, sizeof(line), k, &pl[k], was);
		say(rep, "%s", line);
	}
	if (!lists_changed || preview)
		return EXIT_DONE;
	if (journal_target(c) || lists_replace(l, &pl[0], &pl[1]))
		return EXIT_FAIL;
	return EXIT_DONE;
}

/* Whether @c's rates cannot go on @l, after saying why: a fleet agent shares its windows. */
static int rate_refused(const struct limiter *l, const struct config *c)
{
	__u64 pid = settings_any_rate(&c->s) ? fleet_running(l) : 0;

	if (pid)
		log_err("cannot apply to '%s': the file limits by a rate, and " FLEET_RATE_HINT,
			c->ifname, (unsigned long long)pid);
	return pid != 0;
}

static int run(struct config *c, FILE *out, int undo)
{
	struct prefix_list pl[LIST_KINDS];
	struct xdp_rl_list_meta was;
	int r = EXIT_FAIL, held = -1, changed, k;
	char line[2 * XDP_RL_LIST_PATH + 128];
	struct config cur;
	struct report rep;
	struct limiter l;
	unsigned int ifindex;

	lists_changed = 0;
	if (preview && !if_nametoindex(c->ifname)) {
		fprintf(out, "xdp-rl: %s: would be: refused (no such interface here)\n", c->ifname);
		return EXIT_DONE;
	}
	if (iface_resolve(c->ifname, &ifindex, "cannot apply to"))
		return EXIT_FAIL;
	/* A file's lists, read before anything changes (a limiter's own run has none). */
	memset(pl, 0, sizeof(pl));
	if (c->from_file && apply_read_lists(c, pl))
		return EXIT_USAGE;
	if (!pinned(ifindex) && preview) {
		fprintf(out, "xdp-rl: %s: would be: loaded (no limiter runs there)\n", c->ifname);
		for (k = 0; k < LIST_KINDS; k++) {
			list_line(line, sizeof(line), k, &pl[k], NULL);
			if (pl[k].n)
				fprintf(out, "xdp-rl: %s: would be: %s\n", c->ifname, line);
		}
		r = EXIT_DONE;
		goto lists;
	}
	if (!pinned(ifindex)) {
		r = load_new(c, out, c->from_file ? pl : NULL);
		goto lists;
	}
	if (limiter_open(c->ifname, &l, "cannot apply to"))
		goto lists;
	if (config_of(&l, &cur)) {
		log_err("cannot apply to '%s': cannot read its rules: %m", c->ifname);
		config_free(&cur);
		limiter_close(&l);
		goto lists;
	}
	if (rate_refused(&l, c))
		goto out;
	if (report_open(&rep, c->ifname))
		goto out;
	/* attach auto: whatever the running limiter settled on (no change to report). */
	if (c->s.fixed.attach == XDP_RL_ATTACH_AUTO)
		c->s.fixed.attach = cur.s.fixed.attach;
	if (cur.s.fixed.xdp_mode != c->s.fixed.xdp_mode) {
		log_err("cannot apply to '%s': it runs in %s mode, the file says %s, and changing "
			"mode needs a detach (run 'xdp-rl unload %s', then apply again)",
			c->ifname, word_name(mode_words, cur.s.fixed.xdp_mode),
			word_name(mode_words, c->s.fixed.xdp_mode), c->ifname);
	} else if (c->s.fixed.attach != XDP_RL_ATTACH_AUTO &&
		   c->s.fixed.attach != cur.s.fixed.attach) {
		log_err("cannot apply to '%s': it runs %s, the file says attach %s, and changing "
			"that needs a detach (run 'xdp-rl unload %s', then apply again)",
			c->ifname, word_name(attach_words, cur.s.fixed.attach),
			word_name(attach_words, c->s.fixed.attach), c->ifname);
	} else if (!c->from_file || (r = lists_step(&l, c, pl, &rep, &held, &was)) == EXIT_DONE) {
		changed = lists_changed; /* replace() runs the rule diff again: run() anew */
		/* A new run priority or pass-to takes a new program in the dispatcher: a replacement. */
		r = !config_same_tables(&cur, c) || !config_same_attach(&cur, c) ?
			    replace(&cur, c, &rep) :
			    change(&l, &cur, c, &rep, undo);
		/* The rest failed: the lists go back as they were, with it. */
		if (r != EXIT_DONE && changed && !preview && undo)
			lists_restore(&l, held, &was);
		if (r == EXIT_DONE && changed && !preview && journal_remove())
			r = EXIT_FAIL;
	}
	report_close(&rep, r == EXIT_DONE ? out : NULL);
out:
	config_free(&cur);
	limiter_close(&l);
lists:
	if (held >= 0)
		close(held);
	list_free(&pl[0]);
	list_free(&pl[1]);
	return r;
}

int apply_config(struct config *c, FILE *out)
{
	return run(c, out, 1);
}

int apply_preview(struct config *c, FILE *out)
{
	int r;

	preview = 1;
	r = run(c, out, 0);
	preview = 0;
	return r;
}

void apply_recover(void)
{
	char why[512], path[PATH_MAX], *text;
	struct config c;
	size_t len;
	int r;

	if (journal_read(&text, &len) <= 0)
		return;
	journal_path(path, sizeof(path));
	r = config_parse(text, len, path, &c, why, sizeof(why));
	free(text);
	if (r) {
		log_warn("removed the journal of an apply that was interrupted, which cannot be "
			 "read: %s",
			 why);
		journal_remove();
	} else if (!if_nametoindex(c.ifname)) {
		log_warn("removed the journal of an apply to '%s' that was interrupted (%s): the "
			 "interface is gone",
			 c.ifname, path);
		journal_remove();
	} else if (run(&c, NULL, 0) == EXIT_DONE) {
		log_warn("finished an apply that was interrupted (%s): the limiter on '%s' is as "
			 "its file says",
			 path, c.ifname);
	} else {
		log_warn("cannot finish an apply to '%s' that was interrupted (%s): the next "
			 "xdp-rl command tries again",
			 c.ifname, path);
	}
	config_free(&c);
}
