// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The kernel floor's message (user/lib/skel.c): what `load` says on a kernel
 * older than Linux 6.1 instead of a bare errno. test_floor.c checks the
 * probe itself on the running kernel.
 */
#include <string.h>

#include "skel.h"
#include "unit.h"

UNIT_TEST(floor_text)
{
	char buf[200];

	ASSERT_STREQ(skel_floor_text("6.1.0-56-amd64", 1, buf, sizeof(buf)), "",
		     "floor: a kernel with the helper gets no clause");
	ASSERT_STREQ(skel_floor_text("5.15.0-91-generic", 0, buf, sizeof(buf)),
		     ": this kernel (5.15.0-91-generic) has no bpf_ktime_get_tai_ns, which came in "
		     "Linux 6.1: xdp-rl needs Linux 6.1 or later",
		     "floor: a kernel without it is told what is missing and which kernel has it");
}
