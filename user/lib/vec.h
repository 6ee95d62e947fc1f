/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * vec.h - growing arrays: an array held as a pointer, the elements in use
 * and the elements allocated ({v, n, cap}), given room by doubling. The
 * one place such an array grows, its sizes checked against overflow.
 * Bottom layer.
 */
#ifndef XDP_RL_VEC_H
#define XDP_RL_VEC_H

#include <stddef.h>

/*
 * Room in the array @arr (an lvalue, a pointer to its first element; NULL
 * when @cap is 0) for @more elements after its first @n, @cap of them
 * allocated (an lvalue of type size_t): it grows to @first elements, then
 * twice as many each time, until they fit. 0; or -1 with errno ENOMEM
 * (out of memory, or a size past SIZE_MAX), @arr and @cap as they were.
 */
#define vec_room(arr, n, cap, more, first) \
	vec_room_((void *)&(arr), (n), &(cap), (more), sizeof(*(arr)), (first))

/*
 * vec_room's work: *@arrp is the array (any object pointer, read and
 * written as bytes), its elements @size bytes each.
 */
int vec_room_(void *arrp, size_t n, size_t *cap, size_t more, size_t size, size_t first);

#endif
