// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pcapng.c - a pcapng file written block by block (see pcapng.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcapng.h"

#define BT_SHB 0x0A0D0D0AU
#define BT_IDB 0x00000001U
#define BT_EPB 0x00000006U

#define OPT_END		 0
#define OPT_COMMENT	 1
#define SHB_USERAPPL	 4
#define IF_NAME		 2
#define IF_TSRESOL	 9
#define LINKTYPE_ETH	 1
#define BYTE_ORDER_MAGIC 0x1A2B3C4DU

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Room for @n more bytes in the buffer: 0, or -1 (ENOMEM). */
static int reserve(struct pcapng *w, size_t n)
{
	unsigned char *p;
	size_t cap;

	if (w->len + n <= w->cap)
		return 0;
	cap = w->cap ? w->cap : 65536;
	while (cap < w->len + n)
		cap *= 2;
	p = realloc(w->buf, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	w->buf = p;
	w->cap = cap;
	return 0;
}

static void put(struct pcapng *w, const void *p, size_t n)
{
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void put32(struct pcapng *w, __u32 v)
{
	put(w, &v, 4);
}

static void put16(struct pcapng *w, __u16 v)
{
	put(w, &v, 2);
}

static void put_zeros(struct pcapng *w, size_t n)
{
	memset(w->buf + w->len, 0, n);
	w->len += n;
}

/* An option's bytes: code, length, value padded to 4. */
static size_t opt_size(size_t len)
{
	return 4 + pad4(len);
}

static void put_opt(struct pcapng *w, __u16 code, const void *v, size_t len)
{
	put16(w, code);
	put16(w, (__u16)len);
	put(w, v, len);
	put_zeros(w, pad4(len) - len);
}

/* A comment fits an option (its length is 16 bits); longer ones are cut. */
static size_t comment_len(const char *comment)
{
	size_t n = comment ? strlen(comment) : 0;

	return n > 0xfff0 ? 0xfff0 : n;
}

int pcapng_begin(struct pcapng *w, int fd, const char *app, const char *ifname, __u32 snaplen)
{
	size_t alen = strlen(app), ilen = strlen(ifname), shb, idb;
	__u8 tsresol = 9; /* nanoseconds */

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	shb = 28 + opt_size(alen) + 4;
	idb = 20 + opt_size(ilen) + opt_size(1) + 4;
	if (reserve(w, shb + idb))
		return -1;
	put32(w, BT_SHB);
	put32(w, (__u32)shb);
	put32(w, BYTE_ORDER_MAGIC);
	put16(w, 1); /* version 1.0 */
	put16(w, 0);
	put32(w, 0xffffffffU); /* section length: not given */
	put32(w, 0xffffffffU);
	put_opt(w, SHB_USERAPPL, app, alen);
	put32(w, OPT_END);
	put32(w, (__u32)shb);

	put32(w, BT_IDB);
	put32(w, (__u32)idb);
	put16(w, LINKTYPE_ETH);
	put16(w, 0);
	put32(w, snaplen);
	put_opt(w, IF_NAME, ifname, ilen);
	put_opt(w, IF_TSRESOL, &tsresol, 1);
	put32(w, OPT_END);
	put32(w, (__u32)idb);
	return 0;
}

size_t pcapng_packet_size(__u32 caplen, const char *comment)
{
	size_t clen = comment_len(comment);

	return 28 + pad4(caplen) + (clen ? opt_size(clen) + 4 : 0) + 4;
}

int pcapng_packet(struct pcapng *w, __u64 ts_ns, const void *data, __u32 caplen, __u32 len,
		  const char *comment)
{
	size_t clen = comment_len(comment), size = pcapng_packet_size(caplen, comment);

	if (reserve(w, size))
		return -1;
	put32(w, BT_EPB);
	put32(w, (__u32)size);
	put32(w, 0); /* the interface */
	put32(w, (__u32)(ts_ns >> 32));
	put32(w, (__u32)ts_ns);
	put32(w, caplen);
	put32(w, len);
	put(w, data, caplen);
	put_zeros(w, pad4(caplen) - caplen);
	if (clen) {
		put_opt(w, OPT_COMMENT, comment, clen);
		put32(w, OPT_END);
	}
	put32(w, (__u32)size);
	return 0;
}

int pcapng_flush(struct pcapng *w)
{
	size_t off = 0;
	ssize_t n;

	while (off < w->len) {
		n = write(w->fd, w->buf + off, w->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			/* Keep what was not written, whole blocks or not: the caller stops. */
			memmove(w->buf, w->buf + off, w->len - off);
			w->len -= off;
			w->written += off;
			return -1;
		}
		off += (size_t)n;
	}
	w->written += off;
	w->len = 0;
	return 0;
}

void pcapng_free(struct pcapng *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}
