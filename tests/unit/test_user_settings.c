// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_settings.c - the options' table of load and set
 * (user/settings.h): the words it offers are the values it takes, and
 * --ban's parsing and merge; the live flag bans need (user/live.h). No
 * root, no kernel; built into build/test_user.
 */
#include <string.h>
#include <time.h>

#include "live.h"
#include "options.h"
#include "settings.h"
#include "unit.h"

/*
 * settings_words (what `help --options` and the completion offer): each
 * entry names an option of load that takes a value, and every word of it
 * is a value settings_option accepts for that option.
 */
UNIT_TEST(settings_words)
{
	const struct opt_words *ow;
	const struct opt_spec *o;
	const struct word *w;
	struct settings s;
	struct why why;

	for (ow = settings_words; ow->opt; ow++) {
		o = opt_find(settings_load_opts, ow->opt);
		if (!ASSERT_TRUE(o && o->arg,
				 "settings_words: --%s is an option of load with a value", ow->opt))
			continue;
		for (w = ow->words; w->name; w++) {
			settings_init(&s);
			ASSERT_EQ(settings_option(o->id, w->name, &s, &why), 0,
				  "settings_words: --%s %s is accepted", ow->opt, w->name);
		}
	}
}

#define SEC_NS 1000000000ULL

/* --ban DUR|off: parsed, refused with a reason, and merged by set. */
UNIT_TEST(settings_ban)
{
	const struct opt_spec *o;
	struct xdp_rl_live next = {};
	struct why why = {};
	struct settings s;

	o = opt_find(settings_load_opts, "ban");
	ASSERT_TRUE(o && o->id == OPT_BAN && o->arg && !strcmp(o->arg, "DUR"),
		    "settings_ban: load takes --ban DUR");
	o = opt_find(settings_set_opts, "ban");
	ASSERT_TRUE(o && o->id == OPT_BAN && o->arg && !strcmp(o->arg, "DUR|off"),
		    "settings_ban: set takes --ban DUR|off");
	ASSERT_TRUE(setting_named("ban", IN_CONFIG) != NULL,
		    "settings_ban: a config file takes 'ban'");

	settings_init(&s);
	ASSERT_EQ(settings_option(OPT_BAN, "10m", &s, &why), 0, "settings_ban: --ban 10m");
	ASSERT_EQ(s.live.ban_ns, 600 * SEC_NS, "settings_ban: ... is 600 s");
	ASSERT_TRUE(settings_given(&s, OPT_BAN), "settings_ban: ... and given");
	ASSERT_TRUE(settings_any(&s, IN_SET), "settings_ban: ... a setting set changes");
	ASSERT_EQ(settings_option(OPT_BAN, "1ms", &s, &why), 0, "settings_ban: --ban 1ms");
	ASSERT_EQ(settings_option(OPT_BAN, "366d", &s, &why), 0, "settings_ban: --ban 366d");
	ASSERT_EQ(s.live.ban_ns, 366 * 86400 * SEC_NS, "settings_ban: ... the longest");
	ASSERT_EQ(settings_option(OPT_BAN, "off", &s, &why), 0, "settings_ban: --ban off");
	ASSERT_EQ(s.live.ban_ns, 0, "settings_ban: ... is no ban");
	s.live.ban_ns = 1;
	ASSERT_EQ(settings_option(OPT_BAN, "0", &s, &why), 0, "settings_ban: --ban 0");
	ASSERT_EQ(s.live.ban_ns, 0, "settings_ban: ... is no ban either");

	ASSERT_EQ(settings_option(OPT_BAN, "999us", &s, &why), -1,
		  "settings_ban: shorter than 1ms is refused");
	ASSERT_STREQ(why.text, "invalid --ban '999us': out of range 1ms..366d (or 'off')",
		     "settings_ban: ... with the range");
	ASSERT_EQ(why.opt, OPT_BAN, "settings_ban: ... blaming --ban");
	ASSERT_EQ(settings_option(OPT_BAN, "367d", &s, &why), -1,
		  "settings_ban: longer than 366d is refused");
	ASSERT_EQ(settings_option(OPT_BAN, "5", &s, &why), -1,
		  "settings_ban: a number without a unit is refused");
	ASSERT_STRSTR(why.text, "needs a unit", "settings_ban: ... saying so");
	ASSERT_EQ(settings_option(OPT_BAN, "", &s, &why), -1, "settings_ban: '' is refused");
	ASSERT_EQ(settings_option(OPT_BAN, "-1s", &s, &why), -1, "settings_ban: -1s is refused");
	ASSERT_EQ(settings_option(OPT_BAN, "Off", &s, &why), -1,
		  "settings_ban: 'Off' is refused (the word is 'off')");

	/* set: the running settings get the ban given, and keep what was not given. */
	settings_init(&s);
	next.ban_ns = 5 * SEC_NS;
	next.layer[0].limit = 7;
	next.nlayers = 1;
	settings_option(OPT_LIMIT, "9", &s, &why);
	settings_merge(&s, &next);
	ASSERT_EQ(next.ban_ns, 5 * SEC_NS, "settings_ban: set without --ban keeps the ban");
	ASSERT_EQ(settings_option(OPT_BAN, "1h", &s, &why), 0, "settings_ban: set --ban 1h");
	settings_merge(&s, &next);
	ASSERT_EQ(next.ban_ns, 3600 * SEC_NS, "settings_ban: ... merged");
	ASSERT_EQ(next.layer[0].limit, 9, "settings_ban: ... with the rest given");
	ASSERT_EQ(settings_option(OPT_BAN, "off", &s, &why), 0, "settings_ban: set --ban off");
	settings_merge(&s, &next);
	ASSERT_EQ(next.ban_ns, 0, "settings_ban: ... merged: no ban");
}

/*
 * XDP_RL_F_BANS (include/xdp_rl.h): set by live_finish while a ban is set,
 * globally or by a rule, and kept by every change after (a ban made may
 * still hold); a limiter that never had one has it clear.
 */
UNIT_TEST(live_bans_flag)
{
	struct rules_summary rs = {}, ban_rule = { .any_ban = 1 };
	struct xdp_rl_live live = { .nlayers = 1 }, prev;

	live.layer[0].limit = 10;
	live.layer[0].window_ns = SEC_NS;
	live_finish(&live, &rs, NULL, 0);
	ASSERT_EQ(live.flags & XDP_RL_F_BANS, 0, "live_bans_flag: no ban, no flag");
	live_finish(&live, &ban_rule, NULL, 1);
	ASSERT_EQ(live.flags & XDP_RL_F_BANS, XDP_RL_F_BANS,
		  "live_bans_flag: a rule's ban sets it");

	live.flags = 0;
	live.ban_ns = 60 * SEC_NS;
	live_finish(&live, &rs, NULL, 0);
	ASSERT_EQ(live.flags & XDP_RL_F_BANS, XDP_RL_F_BANS, "live_bans_flag: --ban sets it");
	/* set --ban off: from the running settings, which have it. */
	prev = live;
	live.ban_ns = 0;
	live_finish(&live, &rs, &prev, 0);
	ASSERT_EQ(live.flags & XDP_RL_F_BANS, XDP_RL_F_BANS,
		  "live_bans_flag: --ban off keeps it (a ban made may still hold)");
	/* rule del of the last rule with a ban: the same. */
	live_finish(&live, &rs, &prev, 1);
	ASSERT_EQ(live.flags & XDP_RL_F_BANS, XDP_RL_F_BANS, "live_bans_flag: ... and so on");
	ASSERT_EQ(live.flags & XDP_RL_F_SELECT, 0, "live_bans_flag: no other flag with it");
}

/* Parse each of @args (an option id, then its value) into @s: 0, or the first -1 (why in @why). */
static int options(struct settings *s, struct why *why, const int *ids, const char *const *vals)
{
	int i;

	for (i = 0; ids[i]; i++)
		if (settings_option(ids[i], vals[i], s, why))
			return -1;
	return 0;
}

/* load's --rate and --burst: the one layer a rate, its burst N by default; what goes with what. */
UNIT_TEST(settings_rate_load)
{
	static const struct {
		int ids[4];
		const char *vals[4], *why;
	} bad[] = {
		{ { OPT_RATE, OPT_LIMIT },
		  { "10/1s", "5" },
		  "give either --rate or --limit/--window" },
		{ { OPT_WINDOW, OPT_RATE },
		  { "1s", "10/1s" },
		  "give either --rate or --limit/--window" },
		{ { OPT_RATE, OPT_LAYER }, { "10/1s", "5/1s" }, "give either --rate or --layer" },
		{ { OPT_BURST }, { "5" }, "--burst goes with --rate N/DUR" },
		{ { OPT_RATE, OPT_ALIGNED }, { "10/1s", NULL }, "a rate has no windows to align" },
		{ { OPT_RATE }, { "1/1h" }, "cannot keep --rate: 1/1h is slower than the slowest" },
		{ { OPT_RATE, OPT_BURST, OPT_BYTES },
		  { "1000/1s", "59", NULL },
		  "a burst of 59 bytes can never pass a frame" },
	};
	struct settings s;
	struct why why = {};
	size_t i;

	settings_init(&s);
	ASSERT_EQ(settings_option(OPT_RATE, "6000/1m", &s, &why), 0, "settings_rate_load: --rate");
	ASSERT_EQ(settings_finish_load(&s, "load", &why), 0, "settings_rate_load: %s", why.text);
	ASSERT_EQ(s.live.nlayers, 1, "settings_rate_load: one layer");
	ASSERT_TRUE(xdp_rl_is_rate(&s.live.layer[0]), "settings_rate_load: ... a rate");
	ASSERT_EQ(s.live.layer[0].burst, 6000, "settings_rate_load: ... of burst N");
	ASSERT_EQ(xdp_rl_rate_cost(s.live.layer[0].per_fp, 1), 10000000,
		  "settings_rate_load: ... a unit 10 ms");
	ASSERT_EQ(s.fixed.max_layers, 1, "settings_rate_load: room for one layer");

	settings_init(&s);
	settings_option(OPT_BURST, "250", &s, &why);
	settings_option(OPT_RATE, "100/1s", &s, &why);
	ASSERT_EQ(settings_finish_load(&s, "load", &why), 0, "settings_rate_load: %s", why.text);
	ASSERT_EQ(s.live.layer[0].burst, 250, "settings_rate_load: --burst 250, given first");
	ASSERT_EQ(s.live.layer[0].tau_ns, 2500000000ULL, "settings_rate_load: ... 2.5 s of rate");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		settings_init(&s);
		memset(&why, 0, sizeof(why));
		ASSERT_EQ(options(&s, &why, bad[i].ids, bad[i].vals) ||
				  settings_finish_load(&s, "load", &why),
			  1, "settings_rate_load refuses: %s", bad[i].why);
		ASSERT_STRSTR(why.text, bad[i].why, "settings_rate_load: ... saying so");
	}
}

/* set's --rate and --burst on the limits in force (settings_rate), and the aligned check. */
UNIT_TEST(settings_rate_set)
{
	struct rules_summary none = {}, rate_rule = { .any_rate = 1 };
	struct xdp_rl_live run = {}, next;
	struct settings s;
	struct why why = {};

	run.nlayers = 1;
	run.layer[0] = (struct xdp_rl_layer){ .limit = 10, .window_ns = SEC_NS };
	/* Windows in force: --burst alone has no rate to change. */
	settings_init(&s);
	settings_option(OPT_BURST, "5", &s, &why);
	next = run;
	ASSERT_EQ(settings_rate(&s, &next, &why), -1, "settings_rate_set: --burst on windows");
	ASSERT_STRSTR(why.text, "--burst is a rate's", "settings_rate_set: ... refused");
	/* --rate: the limits become a rate, of burst N unless given. */
	settings_init(&s);
	settings_option(OPT_RATE, "20/1s", &s, &why);
	next = run;
	next.nlayers = 2;
	next.layer[1] = run.layer[0];
	ASSERT_EQ(settings_rate(&s, &next, &why), 0, "settings_rate_set: --rate (%s)", why.text);
	ASSERT_TRUE(next.nlayers == 1 && xdp_rl_is_rate(&next.layer[0]) &&
			    next.layer[0].burst == 20 && !next.layer[1].limit,
		    "settings_rate_set: ... the one layer, a rate of burst 20");
	ASSERT_FALSE(layers_same_shape(next.layer, next.nlayers, run.layer, run.nlayers),
		     "settings_rate_set: ... a new shape (a new limit set)");
	/* A rate in force: --burst alone keeps N/DUR; the shape stays. */
	run = next;
	settings_init(&s);
	settings_option(OPT_BURST, "40", &s, &why);
	ASSERT_EQ(settings_rate(&s, &next, &why), 0, "settings_rate_set: --burst 40 (%s)",
		  why.text);
	ASSERT_TRUE(next.layer[0].limit == 20 && next.layer[0].window_ns == SEC_NS &&
			    next.layer[0].burst == 40 && next.layer[0].tau_ns == 2 * SEC_NS,
		    "settings_rate_set: ... 20/1s with a burst of 40");
	ASSERT_TRUE(layers_same_shape(next.layer, 1, run.layer, 1),
		    "settings_rate_set: ... the same shape (what keys owe stays)");
	/* --limit or --window alone cannot change a rate; both make a window. */
	settings_init(&s);
	settings_option(OPT_LIMIT, "5", &s, &why);
	next = run;
	settings_merge(&s, &next);
	ASSERT_EQ(settings_rate(&s, &next, &why), -1, "settings_rate_set: --limit on a rate");
	ASSERT_STRSTR(why.text, "the limit is a rate", "settings_rate_set: ... refused");
	settings_option(OPT_WINDOW, "1m", &s, &why);
	next = run;
	settings_merge(&s, &next);
	ASSERT_EQ(settings_rate(&s, &next, &why), 0, "settings_rate_set: --limit and --window");
	ASSERT_TRUE(!xdp_rl_is_rate(&next.layer[0]) && next.layer[0].limit == 5 &&
			    next.layer[0].window_ns == 60 * SEC_NS && !next.layer[0].per_fp,
		    "settings_rate_set: ... a window of 5/1m, nothing of the rate left");
	/* Aligned: refused with a rate, the limits' or a rule's. */
	settings_init(&s);
	next = run;
	next.flags |= XDP_RL_F_ALIGNED;
	ASSERT_EQ(settings_check_rate(&s, &next, &none, &why), -1,
		  "settings_rate_set: aligned rate");
	ASSERT_STRSTR(why.text, "no windows to align", "settings_rate_set: ... refused");
	next.layer[0] = (struct xdp_rl_layer){ .limit = 10, .window_ns = SEC_NS };
	ASSERT_EQ(settings_check_rate(&s, &next, &none, &why), 0,
		  "settings_rate_set: aligned windows");
	ASSERT_EQ(settings_check_rate(&s, &next, &rate_rule, &why), -1,
		  "settings_rate_set: ... with a rule's rate, refused");
	ASSERT_STRSTR(why.text, "a rule limits by a rate", "settings_rate_set: ... saying so");
}

/* While a rate is in force (the limits' or a rule's), the clock is the precise one. */
UNIT_TEST(live_rate_clock)
{
	struct rules_summary rs = {}, rate_rule = { .any_rate = 1 };
	struct xdp_rl_live live = { .nlayers = 1 };
	struct timespec res;
	char desc[256];

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec) {
		ASSERT_TRUE(1, "live_rate_clock: no coarse clock here");
		return;
	}
	live.tick_ns = res.tv_nsec;
	live.layer[0] = (struct xdp_rl_layer){ .limit = 10, .window_ns = 3600 * SEC_NS };
	live_finish(&live, &rs, NULL, 0);
	ASSERT_EQ(live.flags & XDP_RL_F_COARSE_CLOCK, XDP_RL_F_COARSE_CLOCK,
		  "live_rate_clock: an hour's window runs on the tick clock");
	live_finish(&live, &rate_rule, NULL, 1);
	ASSERT_EQ(live.flags & XDP_RL_F_COARSE_CLOCK, 0, "live_rate_clock: not with a rule's rate");
	ASSERT_EQ(xdp_rl_rate_fill(&live.layer[0], 10, 3600 * SEC_NS / 1000, 20), 0,
		  "live_rate_clock: a rate of 10/3600ms");
	live_finish(&live, &rs, NULL, 0);
	ASSERT_EQ(live.flags & XDP_RL_F_COARSE_CLOCK, 0, "live_rate_clock: nor with the limits'");
	ASSERT_STREQ(live_clock_name(&live), "monotonic", "live_rate_clock: ... named so");
	live_describe(&live, 0, desc, sizeof(desc));
	ASSERT_STREQ(desc, "rate 10/3600ms, burst 20 packets, per key",
		     "live_rate_clock: described");
}
