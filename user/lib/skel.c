// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* skel.c - the embedded XDP program, made ready to load (see skel.h). */
#include <errno.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#if __has_include(<bpf/libbpf_version.h>) /* older libbpf has none */
#include <bpf/libbpf_version.h>
#endif

#include "skel.h"
#include "xdp_rl.skel.h"

/*
 * libbpf 1.0 or later (HACKING.md): its way of returning errors (a negative
 * errno, or NULL and errno), bpf_prog_test_run_opts, LIBBPF_OPTS and
 * bpf_link_create's options are what xdp-rl is written against.
 */
#if !defined(LIBBPF_MAJOR_VERSION) || LIBBPF_MAJOR_VERSION < 1
#error "xdp-rl needs libbpf 1.0 or later (Debian 12's libbpf-dev is 1.1): see HACKING.md"
#endif

/* The aggregate tables (--on-table-full aggregate): an eighth, at least 1024. */
#define AGG_MIN_SOURCES 1024

static void v4_mask(unsigned int prefix, __be32 *mask)
{
	*mask = prefix ? htonl(~0U << (32 - prefix)) : 0;
}

static void v6_mask(unsigned int prefix, __be32 mask[4])
{
	unsigned int i, bits;

	for (i = 0; i < 4; i++) {
		bits = prefix > 32 * i ? prefix - 32 * i : 0;
		v4_mask(bits > 32 ? 32 : bits, &mask[i]);
	}
}

struct bpf_map *skel_map(struct xdp_rl *skel, int map_id)
{
/* clang-format off */
#define SKEL_MAP(id, name, kind)		\
	case XDP_RL_MAP_##id:			\
		return skel->maps.name;
	switch (map_id) {
		XDP_RL_MAPS(SKEL_MAP)
	}
#undef SKEL_MAP
	/* clang-format on */
	return NULL;
}

void skel_tables(const struct xdp_rl_fixed *f, struct skel_tables *t)
{
	__u64 agg = f->max_sources / 8 > AGG_MIN_SOURCES ? f->max_sources / 8 : AGG_MIN_SOURCES;
	int lru = f->table == XDP_RL_TABLE_LRU;
	size_t i;

	/* In the order of the datapath's cfg_buckets: IPv4 tables even, IPv6 odd. */
	t->entries[0] = t->entries[1] = lru ? f->max_sources : xdp_rl_buckets(f->max_sources);
	t->entries[2] = t->entries[3] = lru ? agg : xdp_rl_buckets(agg);
	t->ndrops = 0;
	for (i = 0; i < 4; i++) {
		/* A drop word per window of every slot (bpf/hot.h)... */
		t->drops_base[i] = t->ndrops;
		if (!lru)
			t->ndrops += (__u64)t->entries[i] * XDP_RL_BUCKET_SLOTS * f->max_layers;
	}
	/* ... and of every shared budget. */
	t->drops_base[XDP_RL_T_SHARED] = t->ndrops;
	t->ndrops += (__u64)XDP_RL_MAX_RULES * XDP_RL_MAX_LAYERS;
}

__u32 skel_lru_flags;

/* Add struct @name of @size bytes to @b, its fields (name, type, bit offset, bits) after. */
static int btf_struct(struct btf *b, const char *name, __u32 size, int n, const char *const *names,
		      const int *types, const __u32 *offs, const __u32 *bits)
{
	int id = btf__add_struct(b, name, size), i;

	for (i = 0; id > 0 && i < n; i++)
		if (btf__add_field(b, names[i], types[i], offs[i], bits[i]))
			return -1;
	return id;
}

/*
 * The BTF of an LRU table's key and value (include/xdp_rl.h), for @layers
 * layers: *key and *value are their ids in it. NULL, errno set, on failure.
 */
static struct btf *lru_btf(int v6, __u32 layers, int *key, int *value)
{
	const __u32 head = xdp_rl_lru_head(v6) * 8, klen = xdp_rl_lru_key_size(v6);
	struct btf *b = btf__new_empty();
	int u8, u32, u64, addr, win, wins, drop, drops, rem, rems, ban, bans, ok;

	if (!b)
		return NULL;
	u8 = btf__add_int(b, "__u8", 1, 0);
	u32 = btf__add_int(b, "__u32", 4, 0);
	u64 = btf__add_int(b, "__u64", 8, 0);
	addr = btf__add_array(b, u32, u8, v6 ? 16 : 4);
	*key = btf_struct(b, v6 ? "xdp_rl_lru_key6" : "xdp_rl_lru_key4", klen, 2,
			  (const char *const[]){ "addr", "lsid" }, (const int[]){ addr, u32 },
			  (const __u32[]){ 0, (klen - 4) * 8 }, (const __u32[]){ 0, 0 });
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* count_gen, drops and fleet words as their parts: the count below, the generation on top. */
	win = btf_struct(b, "xdp_rl_window", 16, 3,
			 (const char *const[]){ "start_gen", "count", "gen" },
			 (const int[]){ u64, u64, u64 }, (const __u32[]){ 0, 64, 112 },
			 (const __u32[]){ 0, XDP_RL_COUNT_BITS, XDP_RL_GEN_BITS });
	drop = btf_struct(b, "xdp_rl_drops", 8, 2, (const char *const[]){ "drops", "gen" },
			  (const int[]){ u64, u64 }, (const __u32[]){ 0, XDP_RL_DROPS_BITS },
			  (const __u32[]){ XDP_RL_DROPS_BITS, 64 - XDP_RL_DROPS_BITS });
	rem = btf_struct(b, "xdp_rl_remote", 8, 2, (const char *const[]){ "count", "gen" },
			 (const int[]){ u64, u64 }, (const __u32[]){ 0, XDP_RL_REMOTE_BITS },
			 (const __u32[]){ XDP_RL_REMOTE_BITS, 64 - XDP_RL_REMOTE_BITS });
	/* A ban word (include/xdp_rl.h): as start_gen, when it ends above the generation. */
	ban = btf_struct(b, "xdp_rl_ban", 8, 2, (const char *const[]){ "gen", "until" },
			 (const int[]){ u64, u64 }, (const __u32[]){ 0, XDP_RL_GEN_BITS },
			 (const __u32[]){ XDP_RL_GEN_BITS, 64 - XDP_RL_GEN_BITS });
#else
	win = btf_struct(b, "xdp_rl_window", 16, 2,
			 (const char *const[]){ "start_gen", "count_gen" },
			 (const int[]){ u64, u64 }, (const __u32[]){ 0, 64 },
			 (const __u32[]){ 0, 0 });
	drop = rem = ban = u64;
#endif
	wins = btf__add_array(b, u32, win, layers);
	drops = btf__add_array(b, u32, drop, layers);
	rems = btf__add_array(b, u32, rem, layers);
	bans = btf__add_array(b, u32, ban, layers);
	*value = btf_struct(
		b, v6 ? "xdp_rl_source6" : "xdp_rl_source4", xdp_rl_lru_value_size(v6, layers), 6,
		(const char *const[]){ "key", "seen", "window", "drops", "remote", "bans" },
		(const int[]){ *key, u64, wins, drops, rems, bans },
		(const __u32[]){ 0, head - 64, head, head + layers * 128, head + layers * 192,
				 head + layers * 256 },
		(const __u32[]){ 0, 0, 0, 0, 0, 0 });
	ok = u8 > 0 && u32 > 0 && u64 > 0 && addr > 0 && *key > 0 && win > 0 && drop > 0 &&
	     rem > 0 && ban > 0 && wins > 0 && drops > 0 && rems > 0 && bans > 0 && *value > 0;
	if (!ok || btf__load_into_kernel(b)) {
		btf__free(b);
		errno = errno ? errno : EINVAL;
		return NULL;
	}
	return b;
}

/* Make @m an LRU hash of @entries elements (an IPv6 table if @v6) with the BTF of its values. */
static int lru_table(struct bpf_map *m, int v6, __u32 layers, __u32 entries)
{
	int key, value, fd, err;
	struct btf *b = lru_btf(v6, layers, &key, &value);
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = skel_lru_flags);

	if (!b)
		return -1;
	o.btf_fd = btf__fd(b);
	o.btf_key_type_id = key;
	o.btf_value_type_id = value;
	fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, bpf_map__name(m), xdp_rl_lru_key_size(v6),
			    xdp_rl_lru_value_size(v6, layers), entries, &o);
	err = fd < 0 ? -1 : bpf_map__reuse_fd(m, fd);
	if (fd >= 0)
		close(fd);
	btf__free(b);
	return err ? -1 : 0;
}

int skel_prepare(struct xdp_rl *skel, const struct xdp_rl_fixed *f)
{
#define SKEL_TABLE(id, name, v6) skel->maps.name,
	struct bpf_map *tables[] = { XDP_RL_TABLES(SKEL_TABLE) };
#undef SKEL_TABLE
	__u32 *cfg_buckets = (__u32 *)skel->rodata->cfg_buckets;
	__u64 *drops_base = (__u64 *)skel->rodata->cfg_drops_base;
	int lru = f->table == XDP_RL_TABLE_LRU;
	struct skel_tables t;
	__be32 m6[4], m4;
	size_t i;

	skel_tables(f, &t);
	skel->rodata->cfg_bytes = f->bytes;
	skel->rodata->cfg_layers = f->max_layers;
	skel->rodata->cfg_seed = f->seed;
	skel->rodata->cfg_table = lru ? XDP_RL_TABLE_LRU : XDP_RL_TABLE_BUCKETS;
	skel->rodata->cfg_key = f->key;
	v4_mask(f->v4_prefix, &m4);
	v6_mask(f->v6_prefix, m6);
	skel->rodata->cfg_v4_mask = m4;
	memcpy((void *)skel->rodata->cfg_v6_mask, m6, sizeof(m6));
	memcpy(drops_base, t.drops_base, sizeof(t.drops_base));
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		cfg_buckets[i] = t.entries[i];
		if (lru) {
			if (lru_table(tables[i], xdp_rl_wide(i & 1, f->key), f->max_layers,
				      t.entries[i]))
				return -1;
			continue;
		}
		if (bpf_map__set_value_size(tables[i],
					    XDP_RL_BUCKET_SLOTS *
						    xdp_rl_slot_size(xdp_rl_wide(i & 1, f->key),
								     f->max_layers)) ||
		    bpf_map__set_max_entries(tables[i], t.entries[i]))
			return -1;
	}
	if (t.ndrops > 0xffffffffULL) {
		errno = E2BIG;
		return -1;
	}
	skel->rodata->cfg_hot_mask = xdp_rl_hot_entries(f->max_sources) - 1;
	/* A fleet's share of each window, laid out the same (include/xdp_rl.h). */
	return bpf_map__set_max_entries(skel->maps.hot, xdp_rl_hot_entries(f->max_sources)) ||
	       bpf_map__set_max_entries(skel->maps.hot_key,
					lru ? xdp_rl_hot_entries(f->max_sources) : 1) ||
	       bpf_map__set_max_entries(skel->maps.drops, t.ndrops) ||
	       bpf_map__set_max_entries(skel->maps.remote, t.ndrops) ||
	       bpf_map__set_max_entries(skel->maps.bans, t.ndrops);
}

int skel_clock(struct xdp_rl *skel, struct xdp_rl_live *live)
{
	__u8 frame[ETH_ZLEN] = {};
	struct timespec res;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame));

	live->tick_ns = 0;
	live->jiffies_base_ns = 0;
	/* The coarse clock's resolution is the tick (TICK_NSEC), as jiffies count it. */
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec || !res.tv_nsec ||
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.clock_sync), &o))
		return -1;
	live->tick_ns = res.tv_nsec;
	live->jiffies_base_ns =
		(__s64)skel->bss->sync_coarse_ns - (__s64)(skel->bss->sync_jiffies * live->tick_ns);
	return 0;
}

const char *skel_floor_text(const char *release, int has_helper, char *buf, size_t len)
{
	if (has_helper) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	snprintf(buf, len,
		 ": this kernel (%s) has no bpf_ktime_get_tai_ns, which came in Linux %s: "
		 "xdp-rl needs Linux %s or later",
		 release, SKEL_KERNEL_MIN, SKEL_KERNEL_MIN);
	return buf;
}

const char *skel_floor(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "%s", "?");
	/* 1 if the helper is there, 0 if not; an error (< 0) says nothing: assume it is. */
	return skel_floor_text(u.release,
			       libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_ktime_get_tai_ns,
						       NULL) != 0,
			       buf, len);
}
