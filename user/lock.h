/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lock.h - the state lock: one per network namespace (lib/bpffs.h), taken
 * by every command that changes a limiter there, and what taking it means:
 * whatever a command killed in this namespace left half done is finished
 * or undone first (the pinned folders, limiter.h: limiter_recover; then an
 * apply's journal, apply.h: apply_recover), so the command starts from a
 * whole state. Nothing of another namespace is waited on.
 */
#ifndef XDP_RL_LOCK_H
#define XDP_RL_LOCK_H

/*
 * Before a command changes anything: take this namespace's lock, waiting for
 * a command that holds it, and recover; with @gc also remove the limiters
 * whose interface is gone (limiter_recover). The lock's fd, held until
 * lock_release or exit, or -1 after saying why.
 */
int lock_take(int gc);
/*
 * Before a command that only reads: the same recovery, if the lock is free
 * at once (a command that holds it is alive and finishes its own change),
 * and let go. While this namespace has an apply's journal it waits for the
 * lock instead, since the datapath may be between two states until the
 * apply, or the command finishing it, is done.
 */
void lock_settle(void);
/* Let go of lock_take's lock (the namespace's folder goes if it is empty). */
void lock_release(int fd);

#endif
