/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * kept.h - loaded programs kept from one test to the next (kept.c), for
 * the harness's env_load and env_free.
 */
#ifndef XDP_RL_UNIT_KEPT_H
#define XDP_RL_UNIT_KEPT_H

#include "xdp_rl.h"
#include "xdp_rl.skel.h"

/* What makes two loads the same: compared byte for byte (kept_key_of). */
struct kept_key {
	struct xdp_rl_fixed f; /* as skel_prepare takes it */
	__u32 fake_clock;      /* rodata cfg_fake_clock */
	__u32 hot_after;       /* rodata cfg_hot_after */
	__u32 admin;	       /* the admin program loaded too */
};

/*
 * @k from a load's fixed settings (@f built on zeroed bytes: compared
 * whole) and options; every byte set.
 */
void kept_key_of(struct kept_key *k, const struct xdp_rl_fixed *f, int fake_clock, __u32 hot_after,
		 int admin);
/* A kept program loaded as @k says, reset, now this caller's; or NULL. */
struct xdp_rl *kept_take(const struct kept_key *k);
/* Say a test loaded as @k says (kept after the second time). */
void kept_asked(const struct kept_key *k);
/*
 * @skel, if kept, reset and free for the next taker: 0; -1 if it could not
 * be reset (never taken again); 1 if it is not a kept one (destroy it).
 */
int kept_give_back(struct xdp_rl *skel);

/*
 * Keep @skel, loaded as @k says and untouched since, from now on in this
 * process (for the test of kept_reset): 0, or -1.
 */
int kept_keep(struct xdp_rl *skel, const struct kept_key *k);

/* The harness's load (harness.c): 0 and the program in *@out, or -1 with errno set. */
int kept_load(const struct kept_key *k, struct xdp_rl **out);

#endif
