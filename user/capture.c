// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* capture.c - a limiter's capture: its lease, counters and comments (see capture.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "log.h"
#include "mapmem.h"
#include "proc.h"

const struct word capture_reason_words[] = {
	{ "dropped", XDP_RL_CAP_DROPPED },
	{ "denied", XDP_RL_CAP_DENIED },
	{ "full", XDP_RL_CAP_FULL },
	{ "banned", XDP_RL_CAP_BANNED }, /* a key under a ban (--ban) */
	{ "malformed", XDP_RL_CAP_MALFORMED },
	{ "passed", XDP_RL_CAP_PASSED },
	{ "allowed", XDP_RL_CAP_ALLOWED },
	{ "unselected", XDP_RL_CAP_UNSELECTED },
	{ "not-ip", XDP_RL_CAP_NOT_IP },
	{ NULL },
};

__u64 capture_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

struct xdp_rl_capture *capture_map(const struct limiter *l, const char *what)
{
	struct xdp_rl_capture *c;

	c = mapmem_map(l->fd[PIN_CAPTURE], sizeof(*c), PROT_READ | PROT_WRITE);
	if (!c)
		log_err("%s '%s': cannot map its capture settings: %m", what, l->ifname);
	return c;
}

void capture_unmap(struct xdp_rl_capture *c)
{
	mapmem_unmap(c, sizeof(*c));
}

int capture_read(const struct limiter *l, struct xdp_rl_capture *out)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(l->fd[PIN_CAPTURE], &zero, out) ? -1 : 0;
}

int capture_running(const struct xdp_rl_capture *c)
{
	__u64 until = __atomic_load_n(&c->until_ns, __ATOMIC_ACQUIRE);

	return until > capture_now() && c->pid && c->pid_start &&
	       proc_start_ticks(c->pid) == c->pid_start;
}

/* The per-CPU values of cap_cpu: a buffer of @n, or NULL with errno set. */
static struct xdp_rl_cap_cpu *counters_read(const struct limiter *l, int *n)
{
	struct xdp_rl_cap_cpu *v;
	__u32 zero = 0;

	*n = libbpf_num_possible_cpus();
	if (*n <= 0) {
		errno = -*n;
		return NULL;
	}
	v = calloc((size_t)*n, sizeof(*v));
	if (!v)
		return NULL;
	if (bpf_map_lookup_elem(l->fd[PIN_CAP_CPU], &zero, v)) {
		free(v);
		return NULL;
	}
	return v;
}

int capture_counters(const struct limiter *l, struct xdp_rl_cap_cpu *sum)
{
	struct xdp_rl_cap_cpu *v;
	int n, i;

	memset(sum, 0, sizeof(*sum));
	v = counters_read(l, &n);
	if (!v)
		return -1;
	for (i = 0; i < n; i++) {
		sum->checked += v[i].checked;
		sum->matched += v[i].matched;
		sum->sent += v[i].sent;
		sum->failed += v[i].failed;
	}
	free(v);
	return 0;
}

int capture_counters_zero(const struct limiter *l)
{
	struct xdp_rl_cap_cpu *v;
	__u32 zero = 0;
	int n, err;

	v = counters_read(l, &n);
	if (!v)
		return -1;
	memset(v, 0, (size_t)n * sizeof(*v));
	err = bpf_map_update_elem(l->fd[PIN_CAP_CPU], &zero, v, BPF_ANY);
	free(v);
	return err ? -1 : 0;
}

/* Whether @c's --src takes a source @a of family @fam (bpf/capture.h's capture_src_takes). */
static int src_takes(const struct xdp_rl_capture *c, const __u32 *a, __u32 fam)
{
	int i;

	if (!c->src_family)
		return 1;
	if (c->src_family != fam)
		return 0;
	for (i = 0; i < (fam == 6 ? 4 : 1); i++)
		if ((a[i] & c->src_mask[i]) != c->src_addr[i])
			return 0;
	return 1;
}

/*
 * The packets a CPU judged between two readings of its counters: each
 * moves one of these (a denial in a dry run, would_drop and denied both).
 */
static __u64 judged_since(const __u64 *now, const __u64 *then, int dry_run)
{
	static const int once[] = { XDP_RL_STAT_PASSED,	    XDP_RL_STAT_DROPPED,
				    XDP_RL_STAT_WOULD_DROP, XDP_RL_STAT_NOT_IP,
				    XDP_RL_STAT_UNSELECTED, XDP_RL_STAT_MALFORMED,
				    XDP_RL_STAT_DENIED };
	__u64 n = 0;
	size_t i;

	for (i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		n += now[once[i]] - then[once[i]];
	if (dry_run)
		n -= now[XDP_RL_STAT_DENIED] - then[XDP_RL_STAT_DENIED];
	return n;
}

int capture_pending(const struct limiter *l, const struct xdp_rl_capture *c,
		    struct xdp_rl_cap_cpu *sum,
		    void (*fn)(void *ctx, const struct xdp_rl_cap_record *rec), void *ctx)
{
	struct xdp_rl_cap_record *recs = NULL;
	struct xdp_rl_stats *st = NULL;
	struct xdp_rl_cap_cpu *cpu;
	__u32 zero = 0, action, dry, reason, a[4], fam, dry_run;
	int n, i, ret = -1;

	cpu = counters_read(l, &n);
	if (!cpu)
		return -1;
	recs = calloc((size_t)n, sizeof(*recs));
	st = calloc((size_t)n, sizeof(*st));
	if (!recs || !st || bpf_map_lookup_elem(l->fd[PIN_CAP_BUF], &zero, recs) ||
	    bpf_map_lookup_elem(l->fd[PIN_STATS], &zero, st))
		goto out;
	for (i = 0; i < n; i++) {
		struct xdp_rl_cap_record *r = &recs[i];

		if (!cpu[i].copied || cpu[i].copied != c->gen || r->meta.gen != c->gen ||
		    r->meta.cap_len > XDP_RL_CAP_SNAPLEN_MAX)
			continue;
		dry_run = !!(limiter_live(l)->flags & XDP_RL_F_DRY_RUN);
		/*
		 * Judged only if the CPU judged that one packet since: one that
		 * came after the datapath stopped copying moved the counters too.
		 */
		if (judged_since(st[i].c, cpu[i].snap, dry_run) != 1)
			continue;
		reason = xdp_rl_cap_judged(st[i].c, cpu[i].snap, dry_run, &action, &dry);
		if (reason >= XDP_RL_CAP_REASONS)
			continue;
		sum->checked++;
		if (!(c->reasons & (1U << reason)))
			continue;
		memset(a, 0, sizeof(a));
		fam = xdp_rl_cap_source(r->data, r->meta.cap_len, a);
		if (!src_takes(c, a, fam))
			continue;
		sum->matched++;
		if (cpu[i].skip)
			continue;
		r->meta.rule = ~0U;
		r->meta.reason = (__u8)reason;
		r->meta.action = (__u8)action;
		r->meta.dry_run = (__u8)dry;
		r->meta.cpu = (__u16)i;
		sum->sent++;
		fn(ctx, r);
	}
	ret = 0;
out:
	free(recs);
	free(st);
	free(cpu);
	return ret;
}

void capture_comment(const struct xdp_rl_cap_meta *m, char *buf, size_t len)
{
	const char *reason = word_name(capture_reason_words, m->reason);
	char rule[32] = "";

	if (m->rule == XDP_RL_LIST_ALLOW_ID)
		snprintf(rule, sizeof(rule), " rule=allow-list");
	else if (m->rule == XDP_RL_LIST_DENY_ID)
		snprintf(rule, sizeof(rule), " rule=deny-list");
	else if (m->rule != ~0U)
		snprintf(rule, sizeof(rule), " rule=%u", m->rule);
	snprintf(buf, len, "xdp-rl verdict=%s action=%s%s%s cpu=%u", reason ? reason : "unknown",
		 m->action == XDP_DROP ? "drop" : "pass", m->dry_run ? " dry-run" : "", rule,
		 m->cpu);
}

void capture_describe(const struct xdp_rl_capture *c, char *buf, size_t len)
{
	char reasons[128] = "", src[64] = "";
	struct ip_addr a;
	size_t n = 0;
	int i;

	for (i = 0; i < XDP_RL_CAP_REASONS; i++)
		if (c->reasons & (1U << i))
			n += (size_t)snprintf(reasons + n,
					      n < sizeof(reasons) ? sizeof(reasons) - n : 0, "%s%s",
					      n ? "," : "",
					      word_name(capture_reason_words, (unsigned int)i));
	if ((c->reasons & ((1U << XDP_RL_CAP_REASONS) - 1)) == (1U << XDP_RL_CAP_REASONS) - 1)
		snprintf(reasons, sizeof(reasons), "every verdict");
	if (c->src_family) {
		memset(&a, 0, sizeof(a));
		a.family = c->src_family == 6 ? AF_INET6 : AF_INET;
		memcpy(a.bytes, c->src_addr, c->src_family == 6 ? 16 : 4);
		fmt_prefix(&a, c->src_len, src, sizeof(src));
	}
	snprintf(buf, len, "%s%s%s, 1 in %u, %u bytes of each", reasons, src[0] ? " from " : "",
		 src, c->sample > 1 ? c->sample : 1, c->snaplen);
}
