// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mapmem.c - a BPF map's values mapped into memory (see mapmem.h). */
#include <stdint.h>
#include <unistd.h>
#include <sys/mman.h>

#include "mapmem.h"

size_t mapmem_len(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (bytes > SIZE_MAX - (page - 1))
		return 0;
	return (bytes + page - 1) / page * page;
}

void *mapmem_map(int fd, size_t bytes, int prot)
{
	void *p = mmap(NULL, mapmem_len(bytes), prot, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void mapmem_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, mapmem_len(bytes));
}
