/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xdp_probe.h - why the kernel refuses to attach an XDP program, in its own
 * words. An attach through a bpf_link (what xdp-rl does) gets an errno
 * only; the kernel's reason (its extended ack, what `ip link` prints) comes
 * back only on netlink. Bottom layer: depends on nothing else of xdp-rl.
 */
#ifndef XDP_RL_XDP_PROBE_H
#define XDP_RL_XDP_PROBE_H

#include <stddef.h>
#include <linux/types.h>

/*
 * Try to attach @prog_fd to @ifindex in @mode (XDP_FLAGS_DRV_MODE or
 * _SKB_MODE) through netlink, as `ip link set ... xdp` does, only if no
 * program is there, and take it off again at once should that work. The
 * kernel's message goes to @msg ("" if it gave none). Returns the errno the
 * netlink attach failed with (0 if it worked, and was undone).
 */
int xdp_attach_reason(unsigned int ifindex, int prog_fd, __u32 mode, char *msg, size_t len);

#endif
