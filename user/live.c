// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* live.c - the live settings as a model (see live.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "live.h"

const struct word on_full_words[] = {
	{ "pass", XDP_RL_FULL_PASS },
	{ "drop", XDP_RL_FULL_DROP },
	{ "aggregate", XDP_RL_FULL_AGGREGATE },
	{ NULL, 0 },
};

__u64 window_clock_ns(const struct xdp_rl_live *live)
{
	struct timespec ts;

	/* bpf_ktime_get_ns is CLOCK_MONOTONIC; bpf_ktime_get_tai_ns is CLOCK_TAI. */
	clock_gettime(live->flags & XDP_RL_F_ALIGNED ? CLOCK_TAI : CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__s64 tai_to_unix_ns(void)
{
	/* The test build's stand-in for a kernel whose offset changed (fault.h). */
	const char *fake = test_env("XDP_RL_TEST_TAI_OFFSET_S");
	struct timespec tai, real;

	if (fake)
		return -strtoll(fake, NULL, 10) * 1000000000LL;

	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &real);
	/* The offset is whole seconds (0 until NTP sets it, then -37). */
	return (__s64)((real.tv_sec - tai.tv_sec) + (real.tv_nsec - tai.tv_nsec >= 500000000 ? 1 :
						     real.tv_nsec - tai.tv_nsec <= -500000000 ?
											       -1 :
											       0)) *
	       1000000000LL;
}

int live_tai_stale(const struct xdp_rl_live *live, __s64 *now)
{
	*now = tai_to_unix_ns();
	return (live->flags & XDP_RL_F_ALIGNED) && *now != live->tai_to_unix_ns;
}

const char *live_clock_name(const struct xdp_rl_live *live)
{
	return live->flags & XDP_RL_F_ALIGNED	   ? "tai" :
	       live->flags & XDP_RL_F_COARSE_CLOCK ? "monotonic-coarse" :
						     "monotonic";
}

/* The coarse clock's tick, as the kernel reports it. */
static __u64 coarse_tick_ns(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return ~0ULL;
	return (__u64)res.tv_sec * 1000000000ULL + res.tv_nsec;
}

/* Whether windows counted under @a mean the same under @b. */
static int same_limits(const struct xdp_rl_live *a, const struct xdp_rl_live *b)
{
	__u32 n = a->nlayers < XDP_RL_MAX_LAYERS ? a->nlayers : XDP_RL_MAX_LAYERS;

	return a->nlayers == b->nlayers && !memcmp(a->layer, b->layer, sizeof(a->layer[0]) * n) &&
	       (a->flags & XDP_RL_F_ALIGNED) == (b->flags & XDP_RL_F_ALIGNED);
}

int layers_same_shape(const struct xdp_rl_layer *a, __u32 na, const struct xdp_rl_layer *b,
		      __u32 nb)
{
	__u32 i;

	if (na != nb)
		return 0;
	for (i = 0; i < na && i < XDP_RL_MAX_LAYERS; i++)
		if (xdp_rl_is_rate(&a[i]) != xdp_rl_is_rate(&b[i]))
			return 0;
	return 1;
}

int layers_any_rate(const struct xdp_rl_layer *l, __u32 n)
{
	__u32 i;

	for (i = 0; i < n && i < XDP_RL_MAX_LAYERS; i++)
		if (xdp_rl_is_rate(&l[i]))
			return 1;
	return 0;
}

/*
 * Per-key windows that are all at least 250 ticks long (1s at HZ=250), the
 * --new-sources window included, run on the tick clock (jiffies, a load,
 * where the precise clock is a helper call of 40 ns here); a window then
 * lasts its length to within two ticks (the tick, and the base measured at
 * load), 0.8% at most. A rate (bpf/rate.h) keeps the precise clock: its
 * bound is in ns, and a tick's error would pass a burst more per tick.
 */
void live_finish(struct xdp_rl_live *live, const struct rules_summary *rs,
		 const struct xdp_rl_live *prev, int rules_changed)
{
	__u64 tick = coarse_tick_ns(), shortest = rs->min_window;
	__u32 i;

	live->max_window_ns = rs->max_window;
	/* The datapath reads the transport header only when a selector needs it. */
	live->flags &= ~XDP_RL_F_SELECT;
	if (rs->any_select || !xdp_rl_select_all(&live->select))
		live->flags |= XDP_RL_F_SELECT;
	/* Sticky (live.h): bans made under an earlier --ban may still hold. */
	if (live->ban_ns || rs->any_ban)
		live->flags |= XDP_RL_F_BANS;
	/* The longest ban since the tables were made, as sticky (buckets.h keeps such slots). */
	if (live->ban_ns > live->max_ban_ns)
		live->max_ban_ns = live->ban_ns;
	if (rs->max_ban > live->max_ban_ns)
		live->max_ban_ns = rs->max_ban;
	for (i = 0; i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		if (!shortest || live->layer[i].window_ns < shortest)
			shortest = live->layer[i].window_ns;
		if (live->layer[i].window_ns > live->max_window_ns)
			live->max_window_ns = live->layer[i].window_ns;
	}
	if (live->new_sources.limit && live->new_sources.window_ns < shortest)
		shortest = live->new_sources.window_ns;
	if (!prev || rules_changed || !same_limits(prev, live))
		live->limits_since_ns = window_clock_ns(live);
	else
		live->limits_since_ns = prev->limits_since_ns;
	live->flags &= ~XDP_RL_F_COARSE_CLOCK;
	if (!(live->flags & XDP_RL_F_ALIGNED) && tick != ~0ULL && tick && live->tick_ns == tick &&
	    shortest / 250 >= tick && !rs->any_rate && !layers_any_rate(live->layer, live->nlayers))
		live->flags |= XDP_RL_F_COARSE_CLOCK;
	live->tai_to_unix_ns = tai_to_unix_ns();
}

void live_describe(const struct xdp_rl_live *live, int bytes, char *buf, size_t len)
{
	char w[32];
	size_t off = 0;
	__u32 i;

	for (i = 0; i < live->nlayers && i < XDP_RL_MAX_LAYERS; i++) {
		fmt_duration(live->layer[i].window_ns, w, sizeof(w));
		if (xdp_rl_is_rate(&live->layer[i]))
			off += snprintf(buf + off, len - off, "%srate %llu/%s, burst %llu %s%s",
					i ? " and " : "", (unsigned long long)live->layer[i].limit,
					w, (unsigned long long)live->layer[i].burst,
					bytes ? "byte" : "packet",
					live->layer[i].burst == 1 ? "" : "s");
		else
			off += snprintf(buf + off, len - off, "%s%llu %s%s per %s window",
					i ? " and " : "", (unsigned long long)live->layer[i].limit,
					bytes ? "byte" : "packet",
					live->layer[i].limit == 1 ? "" : "s", w);
		if (off >= len)
			return;
	}
	off += snprintf(buf + off, len - off, ", %s%s",
			live->flags & XDP_RL_F_ALIGNED ? "aligned" : "per key",
			live->flags & XDP_RL_F_DRY_RUN ? ", dry run" : "");
	if (off < len && !xdp_rl_select_all(&live->select)) {
		off += snprintf(buf + off, len - off, ", only ");
		if (off < len)
			fmt_select(&live->select, buf + off, len - off);
		off = strlen(buf);
	}
	if (off < len && live->ban_ns) {
		fmt_duration(live->ban_ns, w, sizeof(w));
		off += snprintf(buf + off, len - off, ", a key over its limit banned for %s", w);
	}
	if (off < len && live->new_sources.limit) {
		fmt_duration(live->new_sources.window_ns, w, sizeof(w));
		snprintf(buf + off, len - off, "; at most %llu new sources per %s, then %s",
			 (unsigned long long)live->new_sources.limit, w,
			 word_name(on_full_words, live->on_full));
	}
}
