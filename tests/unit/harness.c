// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* harness.c - the XDP program under BPF_PROG_TEST_RUN (see harness.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "caps.h"
#include "harness.h"
#include "sources.h"
#include "skel.h"
#include "bench.h"
#include "wrap.skel.h"

/* ---- Packets --------------------------------------------------------------- */

void put16(__u8 *p, __u16 v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

struct pkt build(const struct pkt_spec *s)
{
	struct pkt p = {};
	__u8 *q = p.b;
	int i, proto, tlen;

	memset(q, 0x02, 12); /* dst and src MAC */
	q += 12;
	for (i = 0; i < s->vlans; i++) {
		put16(q, i == 0 && s->vlans == 2 ? ETH_P_8021AD : ETH_P_8021Q);
		put16(q + 2, 100 + i);
		q += 4;
	}
	put16(q, s->family == V4 ? ETH_P_IP : ETH_P_IPV6);
	q += 2;
	/* Headers built aside and copied in: at offset 14 they are not aligned. */
	proto = s->proto ? s->proto : IPPROTO_UDP;
	tlen = proto == IPPROTO_TCP && !s->first_cut ? 20 : 8;
	if (s->family == V4) {
		struct iphdr ip = {};

		ip.version = 4;
		ip.ihl = 5;
		ip.ttl = 64;
		ip.protocol = proto;
		ip.tot_len = htons(20 + tlen);
		if (s->later_fragment)
			ip.frag_off = htons(100); /* offset 800 bytes */
		else if (s->first_cut)
			ip.frag_off = htons(0x2000); /* more fragments, offset 0 */
		inet_pton(AF_INET, s->src, &ip.saddr);
		inet_pton(AF_INET, "198.18.0.2", &ip.daddr);
		memcpy(q, &ip, sizeof(ip));
		q += 20;
	} else {
		struct ipv6hdr ip6 = {};
		__u8 opt[8] = {}, frag[8] = {};
		const int fragment = s->later_fragment || s->first_cut;

		ip6.version = 6;
		ip6.nexthdr = s->ext ? IPPROTO_DSTOPTS : fragment ? IPPROTO_FRAGMENT : proto;
		ip6.hop_limit = 64;
		ip6.payload_len = htons(tlen + 8 * s->ext + 8 * !!fragment);
		inet_pton(AF_INET6, s->src, &ip6.saddr);
		inet_pton(AF_INET6, "2001:2::2", &ip6.daddr);
		memcpy(q, &ip6, sizeof(ip6));
		q += 40;
		for (i = 0; i < s->ext; i++) {
			opt[0] = i + 1 < s->ext ? IPPROTO_DSTOPTS :
				 fragment	? IPPROTO_FRAGMENT :
						  proto;
			opt[2] = 1; /* PadN of 4 */
			opt[3] = 4;
			memcpy(q, opt, 8);
			q += 8;
		}
		if (fragment) {
			frag[0] = proto;
			/* offset 800 bytes; or offset 0 with more fragments */
			put16(frag + 2, s->later_fragment ? 100 << 3 : 1);
			memcpy(q, frag, 8);
			q += 8;
		}
	}
	if (!s->later_fragment) {
		__u8 th[20] = {};

		put16(th, 40000);
		put16(th + 2, s->dport);
		if (proto == IPPROTO_TCP) {
			th[12] = 5 << 4;
			th[13] = s->tcp_flags;
		} else if (proto == IPPROTO_UDP) {
			put16(th + 4, 8);
		}
		memcpy(q, th, tlen);
	}
	q += tlen;
	p.len = q - p.b;
	if (s->size > p.len)
		p.len = s->size;
	return p;
}

/* ---- The program under test ----------------------------------------------- */

void env_free(struct env *e)
{
	mt_unmap(&e->t4);
	mt_unmap(&e->t6);
	/* e->lim borrows the skeleton's config map: nothing of its own to close. */
	if (e->skel && kept_give_back(e->skel) == 1)
		xdp_rl__destroy(e->skel);
	e->skel = NULL;
}

int tested_table(void)
{
	const char *t = getenv("XDP_RL_TEST_TABLE");

	return t && !strcmp(t, "lru") ? XDP_RL_TABLE_LRU : XDP_RL_TABLE_BUCKETS;
}

const char *table_kind_name(int table)
{
	return table == XDP_RL_TABLE_LRU ? "lru" : "buckets";
}

int env_only(struct env *e, int table, const char *why)
{
	if (e->table == table)
		return 1;
	unit_skip(why);
	return 0;
}

int kept_load(const struct kept_key *k, struct xdp_rl **out)
{
	struct xdp_rl *skel = xdp_rl__open();
	int err;

	if (!skel)
		return -1;
	skel->rodata->cfg_fake_clock = k->fake_clock;
	skel->rodata->cfg_hot_after = k->hot_after;
	bpf_program__set_autoload(skel->progs.admin, k->admin);
	if (skel_prepare(skel, &k->f) || xdp_rl__load(skel)) {
		err = errno;
		xdp_rl__destroy(skel);
		errno = err;
		return -1;
	}
	*out = skel;
	return 0;
}

int env_load(struct env *e, const struct load_opts *o)
{
	struct xdp_rl_fixed f;
	struct kept_key key;
	int i, err;

	/* On zeroed bytes: kept_key_of compares it whole, padding too. */
	memset(&f, 0, sizeof(f));
	f.max_sources = o->sources ? o->sources : 1024;
	f.bytes = o->bytes;
	f.v4_prefix = o->v4_prefix ? o->v4_prefix : 32;
	f.v6_prefix = o->v6_prefix ? o->v6_prefix : 64;
	f.max_layers = o->layers ? o->layers : 1;
	f.seed = TEST_SEED;
	f.key = o->key;
	f.table = o->table == TABLE_LRU	    ? XDP_RL_TABLE_LRU :
		  o->table == TABLE_BUCKETS ? XDP_RL_TABLE_BUCKETS :
					      (__u32)tested_table();
	kept_key_of(&key, &f, !o->real_clock, load_hot_after(o), o->admin);

	/* XDP_RL_TEST_LIBBPF=1: libbpf's log, the verifier's included, on stderr. */
	if (!getenv("XDP_RL_TEST_LIBBPF"))
		libbpf_set_print(NULL);
	memset(e, 0, sizeof(*e));
	for (i = 0; i < PIN_MAX; i++)
		e->lim.fd[i] = -1;
	e->table = f.table;
	e->load = key;
	/* A program kept from an earlier test loaded the same way (kept.c), else a load. */
	e->skel = kept_take(&key);
	if (!e->skel) {
		kept_asked(&key);
		if (kept_load(&key, &e->skel))
			goto fail;
	}
	if (mt_map(&e->t4, bpf_map__fd(e->skel->maps.src4), XDP_RL_T_SRC4, f.max_layers, f.seed,
		   f.key) ||
	    mt_map(&e->t6, bpf_map__fd(e->skel->maps.src6), XDP_RL_T_SRC6, f.max_layers, f.seed,
		   f.key))
		goto fail;
	/* The limiter xdp-rl would open: what env_live publishes through. */
	for (i = PIN_FIRST_MAP; i < PIN_MAX; i++)
		e->lim.fd[i] = bpf_map__fd(skel_map(e->skel, i - PIN_FIRST_MAP));
	e->lim.fd[PIN_ADMIN] = bpf_program__fd(e->skel->progs.admin);
	if (limiter_read_config(&e->lim))
		goto fail;
	/* What xdp-rl load writes there, and user space reads the tables by. */
	e->lim.cfg.fixed = f;
	e->prog_fd = bpf_program__fd(e->skel->progs.xdp_rl);
	e->skel->bss->fake_now_ns = 1000 * SEC_NS;
	return 0;
fail:
	err = errno;
	env_free(e);
	errno = err;
	return -1;
}

__u32 load_hot_after(const struct load_opts *o)
{
	return !o->hot_after ? XDP_RL_HOT_AFTER : o->hot_after < 0 ? 0 : (__u32)o->hot_after;
}

/*
 * Whether this process may load the program: asked of its capabilities, not
 * of a load's errno (the verifier refuses a program with EACCES too). Once:
 * caps_check says on stderr what is missing.
 */
static int privileged(void)
{
	static int known = -1;

	if (known < 0)
		known = !caps_check(NEED_BPF | NEED_NET_ADMIN, "test_prog");
	return known;
}

int env_open_at(const char *file, int line, struct env *e, const struct load_opts *o,
		const char *what)
{
	if (!privileged()) {
		unit_skip_privilege("cannot load the XDP program: run as root, "
				    "with CAP_BPF and CAP_NET_ADMIN");
		return -1;
	}
	if (!env_load(e, o))
		return 0;
	unit_fail(file, line, "%s: %s", what, strerror(errno));
	return -1;
}

void env_live(struct env *e, const struct xdp_rl_live *in)
{
	struct xdp_rl_live live = *in;
	__u32 i;

	if (!live.lsid)
		live.lsid = TEST_LSID;
	for (i = 0; i < live.nlayers && i < XDP_RL_MAX_LAYERS; i++)
		if (live.layer[i].window_ns > live.max_window_ns)
			live.max_window_ns = live.layer[i].window_ns;
	if (limiter_publish(&e->lim, &live))
		UNIT_FAIL("%s: publish live settings: %s", unit_name(), strerror(errno));
}

__u32 addr4(const char *s)
{
	__u32 a = 0;

	inet_pton(AF_INET, s, &a);
	return a;
}

int rule4(struct env *e, const char *prefix, int len, struct xdp_rl_rule *r)
{
	struct xdp_rl_rule_key4 k = { .prefixlen = len };
	struct xdp_rl_layers zero = {};

	inet_pton(AF_INET, prefix, &k.addr);
	if (!r->lsid)
		r->lsid = 100 + r->id;
	bpf_map_update_elem(bpf_map__fd(e->skel->maps.shared), &r->id, &zero, 0);
	return bpf_map_update_elem(bpf_map__fd(e->skel->maps.rules4), &k, r, 0);
}

void env_set(struct env *e, __u64 limit, __u64 window_ns, __u32 flags)
{
	struct xdp_rl_live live = { .nlayers = 1, .flags = flags };

	live.layer[0].limit = limit;
	live.layer[0].window_ns = window_ns;
	env_live(e, &live);
}

struct xdp_rl_live live_of(int n, const struct xdp_rl_layer *lay)
{
	struct xdp_rl_live l = {};

	memcpy(l.layer, lay, n * sizeof(*lay));
	l.nlayers = n;
	return l;
}

int run(struct env *e, const struct pkt *p, __u32 repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = p->len,
		    .repeat = repeat);

	if (bpf_prog_test_run_opts(e->prog_fd, &o))
		return -errno;
	return o.retval;
}

int send_n(struct env *e, const struct pkt *p, int n)
{
	int i, ok = 0;

	for (i = 0; i < n; i++)
		ok += run(e, p, 1) == XDP_PASS;
	return ok;
}

const char *verdict(int v)
{
	return v == XDP_PASS ? "PASS" : v == XDP_DROP ? "DROP" : "?";
}

void stats(struct env *e, struct xdp_rl_stats *sum)
{
	int n = libbpf_num_possible_cpus(), c, i;
	struct xdp_rl_stats per[n];
	__u32 zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.stats), &zero, per))
		return;
	for (c = 0; c < n; c++)
		for (i = 0; i < XDP_RL_STAT_MAX; i++)
			sum->c[i] += per[c].c[i];
}

__u64 stat_delta(struct env *e, const struct xdp_rl_stats *before, int which)
{
	struct xdp_rl_stats now;

	stats(e, &now);
	return now.c[which] - before->c[which];
}

int entry4(struct env *e, const char *key, __u32 lsid, struct mt_entry *out)
{
	__u32 k[4] = {};

	inet_pton(AF_INET, key, &k[0]);
	return mt_get(&e->t4, k, lsid, out) > 0;
}

struct xdp_rl_state *windows4_in(struct env *e, const char *key, __u32 lsid)
{
	struct xdp_rl_slot *s;
	struct mt_entry en;
	__u32 k[4] = {};

	inet_pton(AF_INET, key, &k[0]);
	if (e->t4.lru) {
		if (!entry4(e, key, lsid, &en))
			return NULL;
		memcpy(e->snap, en.w, sizeof(e->snap));
		return e->snap;
	}
	s = mt_find(&e->t4, k, lsid);
	return s ? mt_windows(&e->t4, s) : NULL;
}

int windows4_put(struct env *e, const char *key, int layer, const struct xdp_rl_state *w)
{
	__u8 kb[8], v[XDP_RL_LRU_VALUE_MAX];
	struct xdp_rl_state *in;
	__u32 k[4] = {}, lsid = TEST_LSID;

	if (!e->t4.lru) {
		in = windows4(e, key);
		if (!in)
			return -1;
		in[layer] = *w;
		return 0;
	}
	/* An element cannot be written in place from user space: a test replaces it whole. */
	inet_pton(AF_INET, key, &k[0]);
	memcpy(kb, k, 4);
	memcpy(kb + 4, &lsid, 4);
	if (bpf_map_lookup_elem(e->t4.fd, kb, v))
		return -1;
	memcpy(v + xdp_rl_lru_head(0) + layer * sizeof(*w), w, sizeof(*w));
	return bpf_map_update_elem(e->t4.fd, kb, v, BPF_EXIST);
}

struct xdp_rl_state *windows4(struct env *e, const char *key)
{
	return windows4_in(e, key, TEST_LSID);
}

long long count4_layer(struct env *e, const char *key, int layer)
{
	struct mt_entry en;
	__u64 c;

	if (!entry4(e, key, TEST_LSID, &en))
		return -1;
	c = en.w[layer].count_gen;
	/* A fresh window (an LRU element's, never charged) counts nothing. */
	if (e->t4.lru && !xdp_rl_gen_of_count(c))
		return 0;
	/* What it was offered: its count and the drops counted apart (bpf/hot.h). */
	drops_forget();
	return xdp_rl_count(c) + window_drops(&e->lim, XDP_RL_T_SRC4, en.id, layer,
					      xdp_rl_gen_of_count(c),
					      en.has_words ? &en.drops[layer] : NULL);
}

long long count4(struct env *e, const char *key)
{
	return count4_layer(e, key, 0);
}

long long drops4_layer(struct env *e, const char *key, __u32 lsid, int layer)
{
	struct mt_entry en;
	__u64 c;

	if (!entry4(e, key, lsid, &en))
		return -1;
	c = en.w[layer].count_gen;
	drops_forget();
	return window_drops(&e->lim, XDP_RL_T_SRC4, en.id, layer, xdp_rl_gen_of_count(c),
			    en.has_words ? &en.drops[layer] : NULL);
}

/* ---- Rates ------------------------------------------------------------------- */

struct xdp_rl_layer rate_layer(__u64 n, __u64 dur_ns, __u64 burst)
{
	struct xdp_rl_layer l = {};

	if (xdp_rl_rate_fill(&l, n, dur_ns, burst))
		UNIT_FAIL("rate %llu/%lluns burst %llu: xdp_rl_rate_fill refuses it",
			  (unsigned long long)n, (unsigned long long)dur_ns,
			  (unsigned long long)burst);
	return l;
}

/* ---- Two CPUs: one key -------------------------------------------------------- */

int need_two_cpus(void)
{
	if (libbpf_num_possible_cpus() >= 2 && sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		return 0;
	unit_skip("needs two online CPUs");
	return -1;
}

static void ticker_step(struct ticker *t)
{
	struct xdp_rl_state *w = windows4(t->e, "198.18.6.1"), st;
	__u64 gen;

	if (!w)
		return;
	st = w[t->layer];
	gen = st.count_gen >> XDP_RL_COUNT_BITS;
	/* Full: its count reached the limit (drops past it are counted apart, bpf/hot.h). */
	if (gen != t->ticked_gen && xdp_rl_count(st.count_gen) >= t->limit) {
		/* Window starts are rounded up to XDP_RL_GRAIN. */
		t->e->skel->bss->fake_now_ns += t->window_ns + XDP_RL_GRAIN;
		t->ticked_gen = gen;
		t->ticks++;
	}
}

struct hammer {
	struct env *e;
	const struct pkt *p;
	int cpu;
	__u32 repeat, rounds;
	struct ticker *ticker; /* stepped between rounds, if set */
	int err;
};

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;
	cpu_set_t set;
	__u32 i;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		h->err = EINVAL;
		return NULL;
	}
	for (i = 0; i < h->rounds; i++) {
		if (run(h->e, h->p, h->repeat) < 0)
			h->err = errno;
		if (h->ticker && i + 1 < h->rounds) /* a round follows each tick */
			ticker_step(h->ticker);
	}
	return NULL;
}

int hammer2(struct env *e, const struct pkt *p, __u32 repeat, __u32 rounds, struct ticker *t)
{
	struct hammer h[2] = { { e, p, 0, repeat, rounds, t, 0 },
			       { e, p, 1, repeat, rounds, NULL, 0 } };
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, hammer_fn, &h[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return h[0].err ? h[0].err : h[1].err;
}

/* ---- Two CPUs: many sources --------------------------------------------------- */

int walk_open(struct walk *wk, struct env *e, __u32 base, __u32 n)
{
	__u32 slot = BENCH_SLOT_TARGET;
	int i;

	wk->w = bench_wrap__open_and_load();
	if (!wk->w)
		return -1;
	if (bpf_map_update_elem(bpf_map__fd(wk->w->maps.progs), &slot, &e->prog_fd, 0)) {
		bench_wrap__destroy(wk->w);
		return -1;
	}
	wk->w->data->nsrc = n;
	wk->w->data->step = 1;
	for (i = 0; i < BENCH_MAX_CPUS; i++)
		wk->w->bss->base[i] = base;
	wk->fd = bpf_program__fd(wk->w->progs.wrap);
	wk->frame = build(&(struct pkt_spec){ V4, "198.18.0.1", 0, BENCH_FRAME_LEN });
	return 0;
}

void walk_close(struct walk *wk)
{
	bench_wrap__destroy(wk->w);
	wk->w = NULL;
}

void walk_start(struct walk *wk, int cpu, __u64 at)
{
	wk->w->bss->ctr[cpu].n = at;
}

struct walker {
	struct walk *wk;
	int cpu;
	__u32 repeat;
	int err;
};

static void *walker_fn(void *arg)
{
	struct walker *w = arg;
	cpu_set_t set;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = w->wk->frame.b,
		    .data_size_in = w->wk->frame.len, .repeat = w->repeat);

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ||
	    bpf_prog_test_run_opts(w->wk->fd, &o))
		w->err = errno ? errno : EINVAL;
	return NULL;
}

int walk2(struct walk *wk, __u32 repeat)
{
	struct walker w[2] = { { wk, 0, repeat, 0 }, { wk, 1, repeat, 0 } };
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, walker_fn, &w[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return w[0].err ? w[0].err : w[1].err;
}
