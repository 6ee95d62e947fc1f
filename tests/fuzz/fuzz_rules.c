// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_rules.c - the rules file parser (user/rules.h: rules_parse_text,
 * and rule_parse for each line): any text is parsed or refused with a
 * reason, never a crash; every rule it accepts, formatted as a rules file
 * line (rule_format) and parsed again, is the same rule.
 */
#include "fuzz.h"
#include "options.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512], line[RULE_TEXT_MAX], *words[18], *text = fuzz_string(data, size);
	struct rule_spec *v, again;
	struct lines it;
	const char *e;
	size_t n, i;
	int argc;

	if (rules_parse_text(text, size, "fuzz.rules", &v, &n, why, sizeof(why))) {
		FUZZ_CHECK(!strncmp(why, "fuzz.rules:", 11), "a refusal names the file: '%s'", why);
		free(text);
		return 0;
	}
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(i == 0 || rule_prefix_cmp(&v[i - 1], &v[i]) < 0,
			   "sorted, one rule a prefix");
		rule_format(&v[i], line, sizeof(line));
		lines_begin(&it, line, strlen(line));
		words[0] = "rule";
		argc = lines_next(&it, words + 1, 16, &e);
		FUZZ_CHECK(argc > 0, "a formatted rule is words: '%s'", line);
		FUZZ_CHECK(!rule_parse(argc + 1, words, &again, why, sizeof(why)),
			   "a formatted rule parses again: '%s': %s", line, why);
		FUZZ_CHECK(rule_same(&v[i], &again), "... as the same rule: '%s'", line);
	}
	free(v);
	free(text);
	return 0;
}
