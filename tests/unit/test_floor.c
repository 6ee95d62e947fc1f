// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The kernel floor's probe (user/lib/skel.c) on the running kernel: every
 * kernel of the matrix (make test-kernels) is one xdp-rl supports, so the
 * probe finds the helper there and `load` adds nothing to its error.
 */
#include "skel.h"
#include "unit.h"

UNIT_TEST(floor_probe)
{
	char buf[200];

	ASSERT_STREQ(skel_floor(buf, sizeof(buf)), "",
		     "floor: this kernel has what the program needs (bpf_ktime_get_tai_ns)");
}
