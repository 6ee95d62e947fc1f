/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pcapng.h - a pcapng file written block by block (the IETF draft
 * "PCAP Next Generation Dump File Format"): one section header, one
 * Ethernet interface with nanosecond timestamps, and enhanced packet blocks
 * each with a comment (opt_comment), as tcpdump and tshark read them.
 *
 * Blocks are built in memory and written whole: a write(2) of whole blocks
 * each time pcapng_flush is called, so that a writer killed at any point
 * leaves a file that ends with a whole block. Bottom layer: no I/O but
 * write(2) on the fd it is given.
 */
#ifndef XDP_RL_PCAPNG_H
#define XDP_RL_PCAPNG_H

#include <stddef.h>
#include <linux/types.h>

struct pcapng {
	int fd;
	unsigned char *buf; /* whole blocks not written yet */
	size_t len, cap;
	__u64 written; /* bytes written to fd */
};

/* Start a file on @fd: its section header (@app: shb_userappl) and interface (@ifname). */
int pcapng_begin(struct pcapng *w, int fd, const char *app, const char *ifname, __u32 snaplen);
/*
 * The bytes of a packet block of @caplen bytes with comment @comment
 * (pcapng_packet's, before it is added).
 */
size_t pcapng_packet_size(__u32 caplen, const char *comment);
/*
 * Add a packet: @caplen bytes of a frame of @len, at @ts_ns (Unix time in
 * ns), with @comment (NULL or "" for none). 0, or -1 (ENOMEM).
 */
int pcapng_packet(struct pcapng *w, __u64 ts_ns, const void *data, __u32 caplen, __u32 len,
		  const char *comment);
/* Write the blocks added: 0, or -1 with errno set (what was written stays whole). */
int pcapng_flush(struct pcapng *w);
/* Free the buffer (the fd is the caller's). */
void pcapng_free(struct pcapng *w);

#endif
