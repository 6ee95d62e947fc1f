// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mtable.c - a source table, mapped from user space (see mtable.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "mtable.h"

int mt_map(struct mtable *t, int fd, int v6, __u32 layers, __u64 seed)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);

	memset(t, 0, sizeof(*t));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	t->v6 = v6;
	t->layers = layers;
	t->seed = seed;
	t->slot_size = xdp_rl_slot_size(v6, layers);
	t->bucket_size = XDP_RL_BUCKET_SLOTS * t->slot_size;
	t->nbuckets = info.max_entries;
	if (info.value_size != t->bucket_size || !(info.map_flags & BPF_F_MMAPABLE)) {
		errno = EPROTO; /* not a table this xdp-rl made */
		return -1;
	}
	t->len = ((size_t)t->bucket_size * t->nbuckets + page - 1) / page * page;
	t->mem = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t->mem == MAP_FAILED) {
		t->mem = NULL;
		return -1;
	}
	return 0;
}

void mt_unmap(struct mtable *t)
{
	if (t->mem)
		munmap(t->mem, t->len);
	t->mem = NULL;
}

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
	return (void *)((char *)s + xdp_rl_slot_head(t->v6));
}

int mt_key(const struct mtable *t, const struct xdp_rl_slot *s, __u32 k[4], __u32 *lsid)
{
	__u64 tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE);

	if ((tag & XDP_RL_TAG_FLAGS) != XDP_RL_TAG_LIVE)
		return 0;
	memset(k, 0, 16);
	if (t->v6)
		memcpy(k, s + 1, 16);
	else
		k[0] = tag >> 32;
	*lsid = xdp_rl_tag_lsid(tag);
	return 1;
}

struct xdp_rl_slot *mt_find(const struct mtable *t, const __u32 k[4], __u32 lsid)
{
	__u64 h = xdp_rl_hash(k, t->v6, lsid, t->seed), tag = xdp_rl_tag(k, t->v6, lsid, h);
	__u32 b[2], key[4], i, j, l;
	struct xdp_rl_slot *s;

	xdp_rl_bucket_pair(h, t->nbuckets, &b[0], &b[1]);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < XDP_RL_BUCKET_SLOTS; j++) {
			s = mt_slot(t, (__u64)b[i] * XDP_RL_BUCKET_SLOTS + j);
			if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) == tag &&
			    mt_key(t, s, key, &l) && !memcmp(key, k, t->v6 ? 16 : 4))
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
