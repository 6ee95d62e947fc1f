// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* vec.c - growing arrays (see vec.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int vec_room_(void *arrp, size_t n, size_t *cap, size_t more, size_t size, size_t first)
{
	size_t want, need;
	void *v, *nv;

	if (*cap >= n && *cap - n >= more)
		return 0;
	if (!size || more > SIZE_MAX - n)
		goto toobig;
	need = n + more;
	want = *cap ? *cap : first ? first : 1;
	while (want < need) {
		if (want > SIZE_MAX / 2)
			goto toobig;
		want *= 2;
	}
	if (want > SIZE_MAX / size)
		goto toobig;
	/* The array pointer is copied as bytes: it may point to any type. */
	memcpy(&v, arrp, sizeof(v));
	nv = realloc(v, want * size);
	if (!nv) {
		errno = ENOMEM;
		return -1; /* the array is as it was, still the caller's */
	}
	memcpy(arrp, &nv, sizeof(nv));
	*cap = want;
	return 0;
toobig:
	errno = ENOMEM;
	return -1;
}
