// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* admin.c - changes to a limiter's windows, made by its program (see admin.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "admin.h"
#include "fault.h"

int admin_run(const struct limiter *l, struct xdp_rl_admin *rq)
{
	struct xdp_rl_admin out;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = rq, .data_size_in = sizeof(*rq),
		    .data_out = &out, .data_size_out = sizeof(out));

	if (bpf_prog_test_run_opts(l->fd[PIN_ADMIN], &o))
		return -1;
	if (o.data_size_out < sizeof(out)) {
		errno = EPROTO;
		return -1;
	}
	rq->result = out.result;
	return 0;
}

static int key_request(const struct limiter *l, __u32 op, __u32 table, const __u32 k[4], __u32 lsid,
		       __u32 index, __u32 from, __u32 to, __u64 count,
		       const struct xdp_rl_layer *lay)
{
	struct xdp_rl_admin rq = { .op = op,
				   .table = table,
				   .lsid = lsid,
				   .index = index,
				   .from = from,
				   .to = to,
				   .count = count };
	__u32 i;

	if (k)
		memcpy(rq.key, k, sizeof(rq.key));
	for (i = from; lay && i < to && i < XDP_RL_MAX_LAYERS; i++)
		rq.window_ns[i] = lay[i].window_ns;
	/*
	 * A window that kept changing under traffic through the program's
	 * tries is asked again (nothing was changed, or what was is made
	 * again), a millisecond apart: each try loses only to packets landing.
	 */
	for (i = 0; i < ADMIN_ASKS; i++) {
		if (admin_run(l, &rq))
			return -1;
		fault_point("admin: request done");
		if (rq.result != XDP_RL_ADMIN_EBUSY)
			break;
		usleep(1000);
	}
	if (rq.result >= 0)
		return rq.result;
	switch (rq.result) {
	case XDP_RL_ADMIN_EBUSY: errno = EBUSY; break;
	case XDP_RL_ADMIN_ESATURATED: errno = EOVERFLOW; break;
	case XDP_RL_ADMIN_ENOSLOT: errno = ENOSPC; break;
	default: errno = EIO;
	}
	return -1;
}

const char *admin_strerror(int e)
{
	static char buf[160];

	switch (e) {
	case EBUSY:
		snprintf(buf, sizeof(buf),
			 "its window kept changing under traffic through %d tries (nothing was "
			 "changed; run it again)",
			 ADMIN_ASKS);
		return buf;
	case EOVERFLOW: return "the window's count would pass its ceiling (nothing was charged)";
	case ENOSPC: return "no slot could be had in its table (nothing was charged)";
	default: return strerror(e);
	}
}

int admin_reset(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 from, __u32 to,
		__u64 count, const struct xdp_rl_layer *lay)
{
	return key_request(l, XDP_RL_ADMIN_RESET, pin_table(id), k, lsid, 0, from, to, count, lay);
}

int admin_reset_shared(const struct limiter *l, __u32 rule_id, __u32 from, __u32 to, __u64 count,
		       const struct xdp_rl_layer *lay)
{
	return key_request(l, XDP_RL_ADMIN_RESET, XDP_RL_T_SHARED, NULL, 0, rule_id, from, to,
			   count, lay);
}

int admin_charge(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 from,
		 __u32 to, __u64 count, const struct xdp_rl_layer *lay)
{
	return key_request(l, XDP_RL_ADMIN_CHARGE, pin_table(id), k, lsid, 0, from, to, count, lay);
}

int admin_charge_shared(const struct limiter *l, __u32 rule_id, __u32 from, __u32 to, __u64 count,
			const struct xdp_rl_layer *lay)
{
	return key_request(l, XDP_RL_ADMIN_CHARGE, XDP_RL_T_SHARED, NULL, 0, rule_id, from, to,
			   count, lay);
}

int admin_close_table(const struct limiter *l, int id, __u32 from, __u32 to, __u64 *closed)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), b;
	int r;

	if (bpf_obj_get_info_by_fd(l->fd[id], &info, &len))
		return -1;
	if (info.type == BPF_MAP_TYPE_LRU_HASH) {
		/* An LRU table: every element's windows, in one run. */
		r = key_request(l, XDP_RL_ADMIN_CLOSE_BUCKET, pin_table(id), NULL, 0, 0, from, to,
				0, NULL);
		if (r < 0)
			return -1;
		*closed += r;
		return 0;
	}
	for (b = 0; b < info.max_entries; b++) {
		r = key_request(l, XDP_RL_ADMIN_CLOSE_BUCKET, pin_table(id), NULL, 0, b, from, to,
				0, NULL);
		if (r < 0)
			return -1;
		*closed += r;
	}
	return 0;
}

int admin_remote(const struct limiter *l, int id, const __u32 k[4], __u32 lsid, __u32 layer,
		 __u64 word)
{
	return key_request(l, XDP_RL_ADMIN_REMOTE, pin_table(id), k, lsid, 0, layer, layer + 1,
			   word, NULL);
}
