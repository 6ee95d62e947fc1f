// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_settings.c - the options' table of load and set
 * (user/settings.h): the words it offers are the values it takes, and
 * --ban's parsing and merge; the live flag bans need (user/live.h). No
 * root, no kernel; built into build/test_user.
 */
#include <string.h>

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
