/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mapmem.h - a BPF map's values mapped into memory: an mmapable array map
 * (BPF_F_MMAPABLE: the source tables, drops, remote, fleet) shared with the
 * program, read and written in place. The one place such a map is mapped.
 * Bottom layer.
 */
#ifndef XDP_RL_MAPMEM_H
#define XDP_RL_MAPMEM_H

#include <stddef.h>

/* The length of a mapping of @bytes of values: whole pages (0 if past SIZE_MAX). */
size_t mapmem_len(size_t bytes);

/*
 * Map the first @bytes of the values of the mmapable array map @fd (of
 * mapmem_len(@bytes), shared), @prot PROT_READ or PROT_READ | PROT_WRITE:
 * the memory, or NULL with errno (mmap's).
 */
void *mapmem_map(int fd, size_t bytes, int prot);

/* Undo mapmem_map(@bytes) of @p; NULL does nothing. */
void mapmem_unmap(void *p, size_t bytes);

#endif
