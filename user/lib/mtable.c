// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mtable.c - a source table, read from user space (see mtable.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "mapmem.h"
#include "mtable.h"

int mt_map(struct mtable *t, int fd, __u32 table, __u32 layers, __u64 seed, __u32 key)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int v6 = xdp_rl_wide(table == XDP_RL_T_SRC6 || table == XDP_RL_T_AGG6, key);

	memset(t, 0, sizeof(*t));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	t->fd = fd;
	t->wide = v6;
	t->table = table;
	t->layers = layers;
	t->seed = seed;
	if (info.type == BPF_MAP_TYPE_LRU_HASH) {
		t->lru = 1;
		t->entries = info.max_entries;
		t->value_size = xdp_rl_lru_value_size(v6, layers);
		if (info.key_size != xdp_rl_lru_key_size(v6) || info.value_size != t->value_size) {
			errno = EPROTO; /* not a table this xdp-rl made */
			return -1;
		}
		return 0;
	}
	t->slot_size = xdp_rl_slot_size(v6, layers);
	t->bucket_size = XDP_RL_BUCKET_SLOTS * t->slot_size;
	t->nbuckets = info.max_entries;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.value_size != t->bucket_size ||
	    !(info.map_flags & BPF_F_MMAPABLE)) {
		errno = EPROTO;
		return -1;
	}
	t->len = mapmem_len((size_t)t->bucket_size * t->nbuckets);
	t->mem = mapmem_map(fd, t->len, PROT_READ | PROT_WRITE);
	return t->mem ? 0 : -1;
}

void mt_unmap(struct mtable *t)
{
	mapmem_unmap(t->mem, t->len);
	t->mem = NULL;
}

__u64 mt_capacity(const struct mtable *t)
{
	return t->lru ? t->entries : mt_nslots(t);
}

/* ---- The bucket table ---------------------------------------------------------------- */

__u64 mt_nslots(const struct mtable *t)
{
	return (__u64)t->nbuckets * XDP_RL_BUCKET_SLOTS;
}

struct xdp_rl_slot *mt_slot(const struct mtable *t, __u64 i)
{
	return (void *)((char *)t->mem + (i / XDP_RL_BUCKET_SLOTS) * t->bucket_size +
			(i % XDP_RL_BUCKET_SLOTS) * t->slot_size);
}

struct xdp_rl_state *mt_windows(const struct mtable *t, struct xdp_rl_slot *s)
{
	return (void *)((char *)s + xdp_rl_slot_head(t->wide));
}

int mt_key(const struct mtable *t, const struct xdp_rl_slot *s, __u32 k[4], __u32 *lsid)
{
	__u64 tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE);

	if ((tag & XDP_RL_TAG_FLAGS) != XDP_RL_TAG_LIVE)
		return 0;
	memset(k, 0, 16);
	if (t->wide)
		memcpy(k, s + 1, 16);
	else
		k[0] = tag >> 32;
	*lsid = xdp_rl_tag_lsid(tag);
	return 1;
}

struct xdp_rl_slot *mt_find(const struct mtable *t, const __u32 k[4], __u32 lsid)
{
	__u64 h = xdp_rl_hash(k, t->wide, lsid, t->seed), tag = xdp_rl_tag(k, t->wide, lsid, h);
	__u32 b[2], key[4], i, j, l;
	struct xdp_rl_slot *s;

	xdp_rl_bucket_pair(h, t->nbuckets, &b[0], &b[1]);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
			s = mt_slot(t, (__u64)b[i] * XDP_RL_BUCKET_SLOTS + j);
			if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) == tag &&
			    mt_key(t, s, key, &l) && !memcmp(key, k, t->wide ? 16 : 4))
				return s;
		}
	}
	return NULL;
}

__u64 mt_index(const struct mtable *t, const struct xdp_rl_slot *s)
{
	size_t off = (const char *)s - (const char *)t->mem;

	return off / t->bucket_size * XDP_RL_BUCKET_SLOTS + off % t->bucket_size / t->slot_size;
}

void mt_read_windows(const struct mtable *t, struct xdp_rl_slot *s, struct xdp_rl_state *w)
{
	struct xdp_rl_state *src = mt_windows(t, s);
	__u32 i;

	for (i = 0; i < t->layers; i++) {
		w[i].start_gen = __atomic_load_n(&src[i].start_gen, __ATOMIC_ACQUIRE);
		w[i].count_gen = __atomic_load_n(&src[i].count_gen, __ATOMIC_ACQUIRE);
	}
}

/* Slot @s into @e; 0 if it holds no key. */
static int slot_entry(const struct mtable *t, struct xdp_rl_slot *s, struct mt_entry *e)
{
	memset(e, 0, sizeof(*e));
	if (!mt_key(t, s, e->k, &e->lsid))
		return 0;
	mt_read_windows(t, s, e->w);
	e->seen = __atomic_load_n(&s->seen, __ATOMIC_RELAXED);
	e->id = mt_index(t, s);
	return 1;
}

/* ---- An LRU table ----------------------------------------------------------------------- */

/* The LRU key of @k under @lsid (struct xdp_rl_lru_key4 or 6) into @key; its size. */
static size_t lru_key(const struct mtable *t, const __u32 k[4], __u32 lsid, __u8 key[20])
{
	size_t a = t->wide ? 16 : 4;

	memcpy(key, k, a);
	memcpy(key + a, &lsid, sizeof(lsid));
	return a + sizeof(lsid);
}

/* The element @v of key @key into @e; 0 if it holds another key (changing hands meanwhile). */
static int lru_entry(const struct mtable *t, const __u8 *key, const __u8 *v, struct mt_entry *e)
{
	size_t a = t->wide ? 16 : 4, head = xdp_rl_lru_head(t->wide);
	__u64 fs, fc;
	__u32 i;

	memset(e, 0, sizeof(*e));
	if (memcmp(key, v, a + 4))
		return 0;
	memcpy(e->k, v, a);
	memcpy(&e->lsid, v + a, 4);
	memcpy(&e->seen, v + xdp_rl_lru_seen_off(t->wide), 8);
	memcpy(e->w, v + head, t->layers * sizeof(*e->w));
	for (i = 0; i < t->layers; i++) {
		memcpy(&e->drops[i], v + xdp_rl_lru_drops_off(t->wide, t->layers, i), 8);
		memcpy(&e->remote[i], v + xdp_rl_lru_remote_off(t->wide, t->layers, i), 8);
		memcpy(&e->bans[i], v + xdp_rl_lru_ban_off(t->wide, t->layers, i), 8);
	}
	e->has_words = 1;
	xdp_rl_fresh(e->k, t->wide, e->lsid, t->table, t->seed, &fs, &fc);
	e->id = xdp_rl_lru_hot_index(fc);
	return 1;
}

int mt_get(const struct mtable *t, const __u32 k[4], __u32 lsid, struct mt_entry *e)
{
	__u8 key[20], v[XDP_RL_LRU_VALUE_MAX];
	struct xdp_rl_slot *s;

	if (!t->lru) {
		s = mt_find(t, k, lsid);
		return s && slot_entry(t, s, e);
	}
	lru_key(t, k, lsid, key);
	if (bpf_map_lookup_elem(t->fd, key, v))
		return errno == ENOENT ? 0 : -1;
	return lru_entry(t, key, v, e);
}

/* Elements read per batch at first; more if a hash bucket holds more. */
#define LRU_BATCH 1024

int mt_foreach(const struct mtable *t, mt_fn fn, void *ctx)
{
	__u64 i, n = t->lru ? 0 : mt_nslots(t), in = 0, out = 0, calls = 0;
	__u32 batch = LRU_BATCH, count, ksz = xdp_rl_lru_key_size(t->wide), j;
	__u8 *keys = NULL, *vals = NULL;
	struct mt_entry e;
	int r = 0, last = 0, err;
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	for (i = 0; i < n && !r; i++)
		if (slot_entry(t, mt_slot(t, i), &e) && fn(&e, ctx))
			r = 1;
	if (!t->lru)
		return r;
	/*
	 * Batches over the kernel's hash buckets, each read whole; at most as
	 * many calls as the table has buckets could need (a few per element at
	 * worst), so a table that keeps changing meanwhile still ends.
	 */
	while (!r && !last && calls++ <= 2ULL * t->entries + 2) {
		if (!keys) {
			keys = malloc((size_t)batch * ksz);
			vals = malloc((size_t)batch * t->value_size);
			if (!keys || !vals) {
				r = -1;
				break;
			}
		}
		count = batch;
		err = bpf_map_lookup_batch(t->fd, calls == 1 ? NULL : &in, &out, keys, vals, &count,
					   &o);
		if (err && errno == ENOSPC && batch < (1U << 16)) {
			/* A bucket holds more than the batch: a larger one. */
			free(keys);
			free(vals);
			keys = vals = NULL;
			batch *= 4;
			calls--;
			continue;
		}
		if (err && errno != ENOENT) {
			r = -1;
			break;
		}
		last = !!err; /* ENOENT: these are the last */
		for (j = 0; j < count && !r; j++)
			if (lru_entry(t, keys + (size_t)j * ksz, vals + (size_t)j * t->value_size,
				      &e) &&
			    fn(&e, ctx))
				r = 1;
		in = out;
	}
	err = errno;
	free(keys);
	free(vals);
	errno = err;
	return r;
}
