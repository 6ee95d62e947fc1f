// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fault.c - kill points for the crash test (see fault.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "fault.h"

void fault_point(const char *name)
{
#ifdef XDP_RL_FAULTS
	static long reached;
	const char *at = getenv("XDP_RL_FAULT_AT");

	reached++;
	if (getenv("XDP_RL_FAULT_TRACE"))
		fprintf(stderr, "xdp-rl: fault point %ld: %s\n", reached, name);
	if (at && atol(at) == reached) {
		fflush(NULL);
		raise(SIGKILL);
	}
#else
	(void)name;
#endif
}

const char *test_env(const char *name)
{
#ifdef XDP_RL_FAULTS
	return getenv(name);
#else
	(void)name;
	return NULL;
#endif
}
