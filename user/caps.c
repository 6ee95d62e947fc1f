// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* caps.c - capability checks with libcap, never euid == 0. */
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "caps.h"
#include "log.h"

static const struct {
	unsigned int need;
	cap_value_t cap;
	const char *name;
} table[] = {
	{ NEED_BPF, CAP_BPF, "CAP_BPF" },
	{ NEED_NET_ADMIN, CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	{ NEED_SYS_ADMIN, CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
};

int caps_check(unsigned int need, const char *what)
{
	char missing[128] = "";
	cap_flag_value_t v;
	cap_t caps;
	size_t i;

	caps = cap_get_proc();
	if (!caps) {
		log_err("%s: cannot read this process's capabilities: %m", what);
		return -1;
	}
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (!(need & table[i].need))
			continue;
		/* A kernel older than CAP_BPF grants BPF with CAP_SYS_ADMIN. */
		if (cap_get_flag(caps, table[i].cap, CAP_EFFECTIVE, &v) ||
		    v != CAP_SET) {
			if (table[i].cap == CAP_BPF && !CAP_IS_SUPPORTED(CAP_BPF) &&
			    !cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v) &&
			    v == CAP_SET)
				continue;
			if (*missing)
				strcat(missing, ", ");
			strcat(missing, table[i].name);
		}
	}
	cap_free(caps);
	if (!*missing)
		return 0;
	log_err("%s: missing capabilities %s (run as root, e.g. with sudo)", what, missing);
	return -1;
}
