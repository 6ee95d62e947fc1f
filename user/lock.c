// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* lock.c - the state lock and the recovery taking it runs (see lock.h). */
#include <limits.h>

#include "apply.h"
#include "bpffs.h"
#include "journal.h"
#include "limiter.h"
#include "lock.h"

int lock_take(int gc)
{
	int fd = state_lock(0);

	if (fd < 0)
		return -1;
	limiter_recover(gc);
	apply_recover();
	return fd;
}

void lock_settle(void)
{
	char root[PATH_MAX];
	int fd = -1;

	/* Nothing was ever loaded here, unless an apply's journal says otherwise. */
	if (!root_dir(root, sizeof(root), 0))
		fd = state_lock(1);
	if (fd >= 0)
		limiter_recover(0);
	/*
	 * A journal, and the lock busy (or nothing loaded yet): an apply is in
	 * flight, or was killed and another command is about to finish it.
	 * Wait for the lock rather than show a limiter between the two states.
	 */
	if (fd < 0 && journal_exists()) {
		fd = state_lock(0);
		if (fd >= 0)
			limiter_recover(0);
	}
	if (fd < 0)
		return;
	apply_recover();
	state_unlock(fd);
}

void lock_release(int fd)
{
	state_unlock(fd);
}
