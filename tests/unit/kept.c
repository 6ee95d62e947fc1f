// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * kept.c - loaded programs kept from one test to the next (harness.h).
 *
 * A test's load is most of its time where the verifier is slow (a TCG
 * guest of make test-kernels: several seconds a load), and most tests load
 * the program the same way. So the runner's own process keeps a loaded
 * program for each load that tests asked for more than once, and the tests
 * after take it instead of loading: a forked test inherits its fds and its
 * mapped globals. Before a program is taken again, every map it has is put
 * back as a fresh load leaves it (kept_reset): arrays zeroed, hashes and
 * tries emptied, rings drained, globals as loaded. A program with a map of
 * a kind not known here is never kept.
 *
 * The tests run in child processes (unit.c): a child tells the runner,
 * through a shared page, which loads it made and which kept programs it
 * used; the runner, between tests (unit_between_tests), resets those it
 * used and loads, for the next tests, what was asked for twice.
 * XDP_RL_TEST_FRESH=1: every test loads its own, as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "kept.h"
#include "skel.h"

#define KEPT_MAX  12 /* programs kept at once */
#define WANTS_MAX 64 /* loads remembered */

struct kept {
	struct xdp_rl *skel;
	struct kept_key key;
	int taken; /* by this process, now */
	/* The writable globals as loaded (.bss, .data): what a reset puts back. */
	void *image[4];
	size_t image_size[4];
};

/* The page the children write and the runner reads. */
struct kept_shared {
	struct {
		struct kept_key key;
		int asked; /* loads made for it */
	} want[WANTS_MAX];
	int nwant;
	int used[KEPT_MAX]; /* taken since the runner last reset it */
};

static struct kept kept[KEPT_MAX];
static int nkept;
static struct kept_shared *shared;

static int fresh_only(void)
{
	const char *f = getenv("XDP_RL_TEST_FRESH");

	return f && *f && strcmp(f, "0");
}

/* Before main(): the page, in the runner, for every child to inherit. */
__attribute__((constructor)) static void kept_init(void)
{
	void *p;

	if (fresh_only())
		return;
	p = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		shared = memset(p, 0, sizeof(*shared));
}

/* @k's saved globals freed, and @k cleared (its program is the caller's). */
static void kept_forget(struct kept *k)
{
	int j;

	for (j = 0; j < 4; j++)
		free(k->image[j]);
	memset(k, 0, sizeof(*k));
}

/* The kept program loaded as @key says (@untaken: that nobody has taken), or -1. */
static int kept_find(const struct kept_key *key, int untaken)
{
	int i;

	for (i = 0; i < nkept; i++)
		if (!(untaken && kept[i].taken) && !memcmp(&kept[i].key, key, sizeof(*key)))
			return i;
	return -1;
}

__attribute__((destructor)) static void kept_fini(void)
{
	int i;

	for (i = 0; i < nkept; i++) {
		xdp_rl__destroy(kept[i].skel);
		kept_forget(&kept[i]);
	}
	nkept = 0;
}

static int drain(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/* Every element of @fd deleted (a hash, an LRU hash, a trie): 0, or -1. */
static int empty_map(int fd, __u32 key_size)
{
	__u8 key[256];
	int n = 0;

	if (key_size > sizeof(key))
		return -1;
	while (!bpf_map_get_next_key(fd, NULL, key)) {
		if (bpf_map_delete_elem(fd, key) || ++n > (1 << 24))
			return -1;
	}
	return errno == ENOENT ? 0 : -1;
}

/* Every element of array @map zeroed: 0, or -1. */
static int zero_array(const struct bpf_map *map, int percpu)
{
	size_t vs = bpf_map__value_size(map), size = bpf_map__max_entries(map) * vs;
	int fd = bpf_map__fd(map), ncpu = libbpf_num_possible_cpus(), err = 0;
	void *zero, *m;
	__u32 k;

	if (bpf_map__map_flags(map) & BPF_F_MMAPABLE) {
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return -1;
		memset(m, 0, size);
		munmap(m, size);
		return 0;
	}
	if (percpu)
		vs = ((vs + 7) & ~(size_t)7) * (ncpu > 0 ? ncpu : 1);
	zero = calloc(1, vs);
	if (!zero)
		return -1;
	for (k = 0; k < bpf_map__max_entries(map) && !err; k++)
		err = bpf_map_update_elem(fd, &k, zero, 0);
	free(zero);
	return err ? -1 : 0;
}

/* @k's program as a fresh load leaves it: 0, or -1 (then it is not kept). */
static int kept_reset(struct kept *k)
{
	struct bpf_map *map;
	struct ring_buffer *rb;
	__u32 i, zero = 0;
	int g = 0, fd;

	bpf_object__for_each_map(map, k->skel->obj)
	{
		fd = bpf_map__fd(map);
		if (bpf_map__is_internal(map)) {
			if (bpf_map__map_flags(map) & BPF_F_RDONLY_PROG)
				continue; /* .rodata, .kconfig: as loaded, for good */
			/* .bss, .data: one element, the globals */
			if (g >= 4 || bpf_map__value_size(map) != k->image_size[g] ||
			    bpf_map_update_elem(fd, &zero, k->image[g++], 0))
				return -1;
			continue;
		}
		switch (bpf_map__type(map)) {
		case BPF_MAP_TYPE_ARRAY:
			if (zero_array(map, 0))
				return -1;
			break;
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			if (zero_array(map, 1))
				return -1;
			break;
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
		case BPF_MAP_TYPE_LPM_TRIE:
			if (empty_map(fd, bpf_map__key_size(map)))
				return -1;
			break;
		case BPF_MAP_TYPE_ARRAY_OF_MAPS:
			for (i = 0; i < bpf_map__max_entries(map); i++)
				if (bpf_map_delete_elem(fd, &i) && errno != ENOENT)
					return -1;
			break;
		case BPF_MAP_TYPE_RINGBUF:
			rb = ring_buffer__new(fd, drain, NULL, NULL);
			if (!rb)
				return -1;
			i = ring_buffer__consume(rb) < 0;
			ring_buffer__free(rb);
			if (i)
				return -1;
			break;
		default: return -1;
		}
	}
	return 0;
}

/* Save @k's writable globals as they are now, just loaded: 0, or -1. */
static int kept_image(struct kept *k)
{
	struct bpf_map *map;
	__u32 zero = 0;
	size_t size;
	int g = 0;

	bpf_object__for_each_map(map, k->skel->obj)
	{
		if (!bpf_map__is_internal(map) || bpf_map__map_flags(map) & BPF_F_RDONLY_PROG)
			continue;
		size = bpf_map__value_size(map);
		if (g >= 4)
			return -1;
		k->image[g] = malloc(size);
		if (!k->image[g] || bpf_map_lookup_elem(bpf_map__fd(map), &zero, k->image[g]))
			return -1;
		k->image_size[g++] = size;
	}
	/* And every map of a kind kept_reset knows. */
	return kept_reset(k);
}

int kept_keep(struct xdp_rl *skel, const struct kept_key *key)
{
	struct kept *k = &kept[nkept];

	if (nkept == KEPT_MAX)
		return -1;
	memset(k, 0, sizeof(*k));
	k->skel = skel;
	k->key = *key;
	k->taken = 1; /* the caller's */
	if (kept_image(k)) {
		kept_forget(k);
		return -1;
	}
	nkept++;
	return 0;
}

struct xdp_rl *kept_take(const struct kept_key *key)
{
	int i = kept_find(key, 1);

	if (i < 0)
		return NULL;
	kept[i].taken = 1;
	if (shared)
		shared->used[i] = 1;
	return kept[i].skel;
}

int kept_give_back(struct xdp_rl *skel)
{
	int i;

	for (i = 0; i < nkept; i++) {
		if (kept[i].skel != skel)
			continue;
		/* Reset now: a test may load the same way again. */
		if (kept_reset(&kept[i]))
			return -1;
		kept[i].taken = 0;
		if (shared)
			shared->used[i] = 0;
		return 0;
	}
	return 1; /* not a kept one: the caller destroys it */
}

void kept_asked(const struct kept_key *key)
{
	int i;

	if (!shared)
		return;
	for (i = 0; i < shared->nwant; i++)
		if (!memcmp(&shared->want[i].key, key, sizeof(*key)))
			break;
	if (i == WANTS_MAX)
		return;
	if (i == shared->nwant) {
		shared->want[i].key = *key;
		shared->want[i].asked = 0;
		shared->nwant++;
	}
	shared->want[i].asked++;
}

void kept_key_of(struct kept_key *k, const struct xdp_rl_fixed *f, int fake_clock, __u32 hot_after,
		 int admin)
{
	memset(k, 0, sizeof(*k));
	/* Built by the caller from zeroed bytes: its padding compares too. */
	memcpy(&k->f, f, sizeof(*f));
	k->fake_clock = fake_clock;
	k->hot_after = hot_after;
	k->admin = admin;
}

/*
 * Between two tests, in the runner: reset what the last test used (a test
 * that crashed gave nothing back), and load what tests asked for twice.
 */
void unit_between_tests(void)
{
	struct kept *k;
	int i;

	if (!shared)
		return;
	for (i = 0; i < nkept; i++) {
		if (!shared->used[i])
			continue;
		shared->used[i] = 0;
		if (!kept_reset(&kept[i]))
			continue;
		/* Cannot be put back: never taken again. */
		kept[i].taken = 1;
	}
	for (i = 0; i < shared->nwant && nkept < KEPT_MAX; i++) {
		if (shared->want[i].asked < 2 || kept_find(&shared->want[i].key, 0) >= 0)
			continue;
		k = &kept[nkept];
		memset(k, 0, sizeof(*k));
		k->key = shared->want[i].key;
		if (kept_load(&k->key, &k->skel))
			continue;
		if (kept_image(k)) {
			xdp_rl__destroy(k->skel);
			kept_forget(k);
			continue;
		}
		nkept++;
	}
}
