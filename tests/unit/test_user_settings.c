// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_user_settings.c - the options' table of load and set
 * (user/settings.h): the words it offers are the values it takes. No root,
 * no kernel; built into build/test_user.
 */
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
