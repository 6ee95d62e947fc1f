// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_config.c - the config file parser (user/config.h): any text is
 * parsed or refused with a reason naming the file, never a crash; and what
 * it accepts, printed and parsed again, prints the same (the round trip
 * `xdp-rl config` and `apply` rely on).
 */
#include "config.h"
#include "fuzz.h"

/* A line of config_diff_settings: "NEW (was OLD)", counted. */
static void diff_line(const char *what, void *ctx)
{
	FUZZ_CHECK(strstr(what, " (was ") && what[strlen(what) - 1] == ')', "'%s'", what);
	++*(int *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512], *text = fuzz_string(data, size), *a, *b;
	struct config c, d, defaults;
	size_t la, lb;
	int n = 0;

	why[0] = '\0';
	if (config_parse(text, size, "fuzz.conf", &c, why, sizeof(why))) {
		FUZZ_CHECK(!strncmp(why, "fuzz.conf:", 10), "a refusal names the file: '%s'", why);
		config_free(&c);
		free(text);
		return 0;
	}
	a = config_text(&c, &la);
	FUZZ_CHECK(a, "printed");
	FUZZ_CHECK(!config_parse(a, la, "fuzz.conf", &d, why, sizeof(why)),
		   "what was printed is parsed again: %s\n%s", why, a);
	b = config_text(&d, &lb);
	FUZZ_CHECK(b && !strcmp(a, b), "printed, parsed and printed again, the same:\n%s\n---\n%s",
		   a, b ? b : "");
	/* The differences apply reports: none with itself, each said on a line. */
	FUZZ_CHECK(!config_diff_settings(&c, &d, diff_line, &n) && !n, "no difference with itself");
	/* An empty file is refused (it would reset everything); one line of a default is not. */
	FUZZ_CHECK(config_parse("", 0, "fuzz.conf", &defaults, why, sizeof(why)), "empty refused");
	FUZZ_CHECK(!config_parse("limit 1000\n", 11, "fuzz.conf", &defaults, why, sizeof(why)),
		   "defaults: %s", why);
	FUZZ_CHECK(config_diff_settings(&defaults, &c, diff_line, &n) == n, "a line a difference");
	config_free(&defaults);
	free(a);
	free(b);
	config_free(&c);
	config_free(&d);
	free(text);
	return 0;
}
