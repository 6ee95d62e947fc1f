// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench_mem.c - map memory per tracked source, from the kernel's own
 * accounting: the `memlock` line of each map's /proc/self/fdinfo entry
 * (bpf_map_memory_usage(), what `bpftool map show` prints).
 *
 * xdp-rl's object is loaded as `xdp-rl load` loads it (skel_prepare), with
 * both source tables sized for --max-sources (arrays of buckets, two slots
 * per source: the memory is taken at load, full or not), then again with
 * --table lru (the kernel's LRU hashes of --max-sources elements, also
 * taken at load: LRU hashes are preallocated), and the plain reference
 * (preallocated LRU hashes of --max-sources entries) beside them. Each
 * table's words apart from its windows (drops, the fleet's share, bans) are
 * counted with it: the bucket table's are in the `drops`, `remote` and
 * `bans` maps, an LRU element's in the element. Last, each table's src4
 * again under --key src,dport (a key with a port: IPv4 keys wide, laid out
 * as IPv6 ones, include/xdp_rl.h); the other kinds' tables are the same as
 * src's (dst) or as src,dport's (dst,dport).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "bench_user.h"
#include "skel.h"
#include "xdp_rl.skel.h"
#include "plain.skel.h"

unsigned long long map_memlock(int fd)
{
	unsigned long long v = 0;
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		die("mem: cannot read %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct row {
	const char *what;
	__u32 entries;
	unsigned long long bytes;
};

static void print_row(FILE *json, int *first, const char *size, const struct row *r)
{
	printf("  %-24s %-36s %9u %12llu %8.1f MB %8.1f\n", size, r->what, r->entries, r->bytes,
	       r->bytes / 1e6, (double)r->bytes / r->entries);
	if (json)
		fprintf(json,
			"%s{\"size\": \"%s\", \"what\": \"%s\", \"entries\": %u, "
			"\"memlock\": %llu, \"bytes_per_source\": %.2f}",
			*first ? "" : ",\n", size, r->what, r->entries, r->bytes,
			(double)r->bytes / r->entries);
	*first = 0;
}

int cmd_mem(int argc, char **argv)
{
	static const __u32 sizes[] = { 262144, 1000000 };
	static const char *const size_name[] = { "262 144 (the default)", "1 000 000" };
	FILE *json = NULL;
	int first = 1;
	size_t i;

	if (argc == 3 && !strcmp(argv[1], "--json")) {
		json = fopen(argv[2], "w");
		if (!json)
			die("mem: cannot write '%s': %s", argv[2], strerror(errno));
		fprintf(json, "[\n");
	} else if (argc != 1) {
		die("usage: bench_prog mem [--json FILE]");
	}

	printf("  %-24s %-36s %9s %12s %11s %8s\n", "--max-sources", "map", "sources", "memlock B",
	       "", "B/source");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		__u32 n = sizes[i], kind;
		struct bench_plain *pl = bench_plain__open();
		struct row r;

		if (!pl || bpf_map__set_max_entries(pl->maps.plain4, n) ||
		    bpf_map__set_max_entries(pl->maps.plain6, n) || bench_plain__load(pl))
			die("mem: cannot load the plain reference with %u sources: %s", n,
			    strerror(errno));
		for (kind = XDP_RL_TABLE_BUCKETS; kind <= XDP_RL_TABLE_LRU; kind++) {
			const char *tn = kind == XDP_RL_TABLE_LRU ? "lru" : "buckets";
			struct xdp_rl *rl = xdp_rl__open();
			unsigned long long other = 0, words = 0, s4, s6;
			char what[64];
			struct bpf_map *m;

			if (!rl ||
			    skel_prepare(rl, &(struct xdp_rl_fixed){ .max_sources = n,
								     .v4_prefix = 32,
								     .v6_prefix = 64,
								     .max_layers = 1,
								     .table = kind }) ||
			    xdp_rl__load(rl))
				die("mem: cannot load with %u sources, table %s: %s", n, tn,
				    strerror(errno));
			s4 = map_memlock(bpf_map__fd(rl->maps.src4));
			s6 = map_memlock(bpf_map__fd(rl->maps.src6));
			/* The words of windows kept apart from them: per window of each table. */
			words = map_memlock(bpf_map__fd(rl->maps.drops)) +
				map_memlock(bpf_map__fd(rl->maps.remote)) +
				map_memlock(bpf_map__fd(rl->maps.bans));
			bpf_object__for_each_map(
				m, rl->obj) if (m != rl->maps.src4 && m != rl->maps.src6 &&
						m != rl->maps.drops && m != rl->maps.remote &&
						m != rl->maps.bans)
				other += map_memlock(bpf_map__fd(m));

			snprintf(what, sizeof(what), "xdp-rl %s src4 (IPv4 sources)", tn);
			r = (struct row){ what, n, s4 };
			print_row(json, &first, kind ? "" : size_name[i], &r);
			snprintf(what, sizeof(what), "xdp-rl %s src6 (IPv6 sources)", tn);
			r = (struct row){ what, n, s6 };
			print_row(json, &first, "", &r);
			/* All of it, over the 2N sources the two families hold. */
			snprintf(what, sizeof(what), "xdp-rl %s, all maps (2N)", tn);
			r = (struct row){ what, 2 * n, s4 + s6 + words + other };
			print_row(json, &first, "", &r);
			printf("  %-24s (drops, fleet and ban words apart: %llu B; the other maps: %llu B)\n",
			       "", words, other);
			xdp_rl__destroy(rl);
			/* src4 with a port in its key: wide, as src6 is. */
			rl = xdp_rl__open();
			if (!rl ||
			    skel_prepare(rl,
					 &(struct xdp_rl_fixed){ .max_sources = n,
								 .v4_prefix = 32,
								 .v6_prefix = 64,
								 .max_layers = 1,
								 .table = kind,
								 .key = XDP_RL_KEY_SRC_DPORT }) ||
			    xdp_rl__load(rl))
				die("mem: cannot load with %u sources, table %s, --key src,dport: %s",
				    n, tn, strerror(errno));
			snprintf(what, sizeof(what), "xdp-rl %s src4, --key src,dport", tn);
			r = (struct row){ what, n, map_memlock(bpf_map__fd(rl->maps.src4)) };
			print_row(json, &first, "", &r);
			xdp_rl__destroy(rl);
		}
		r = (struct row){ "plain reference, IPv4 table", n,
				  map_memlock(bpf_map__fd(pl->maps.plain4)) };
		print_row(json, &first, "", &r);
		bench_plain__destroy(pl);
	}
	if (json) {
		fprintf(json, "\n]\n");
		fclose(json);
	}
	return 0;
}
