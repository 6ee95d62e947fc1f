/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * dispatch.h - sharing an interface with other XDP programs through
 * libxdp's dispatcher, as xdp-tools (xdp-filter, xdp-loader) and libxdp's
 * users do: one XDP program on the interface, the dispatcher, which calls
 * each program attached to it in turn by run priority (lowest first), and
 * goes on to the next after an action the program's chain-call actions
 * name. Each program is an extension (BPF_PROG_TYPE_EXT) of one of the
 * dispatcher's slots. Bottom layer. libxdp keeps its pins in the bpffs xdp-rl's
 * state is in (bpffs.h), so that every tool finds the same dispatcher.
 */
#ifndef XDP_RL_DISPATCH_H
#define XDP_RL_DISPATCH_H

#include <stddef.h>
#include <linux/types.h>

struct bpf_object;

/*
 * Whether this kernel can run the dispatcher: it lets one XDP program
 * replace a function of another (freplace). 0 if so; else an errno, with
 * the reason in @why.
 */
int dispatch_probe(char *why, size_t len);

/* What to run: a program of a bpf_object not loaded yet, which libxdp loads as an extension. */
struct dispatch_attach {
	struct bpf_object *obj;
	const char *prog; /* the program's name in @obj */
	unsigned int ifindex;
	__u32 xdp_mode;	       /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	unsigned int priority; /* run priority: lower runs first */
	int pass_next;	       /* after XDP_PASS, the next program runs (else the stack) */
};

/*
 * Attach @a's program to the dispatcher on its interface (made if there is
 * none), loading @a->obj. Returns the program's fd (owned by @a->obj), or
 * -1 with errno set and the reason, in libxdp's words if it gave one, in
 * @why.
 */
int dispatch_attach(const struct dispatch_attach *a, char *why, size_t len);

/* Take program @prog_id off the dispatcher on @ifindex. 0 if done or not there. */
int dispatch_detach(unsigned int ifindex, __u32 prog_id);

/* One program an interface runs. */
struct dispatch_prog {
	char name[32];
	__u32 id;
	unsigned int priority;
	__u32 chain; /* XDP actions after which the next program runs (1 << action) */
};

/*
 * The programs on @ifindex: through the dispatcher, in the order it runs
 * them (*@shared 1), or the one program attached alone (*@shared 0). Up to
 * @max into @out; returns how many there are (0: none), or -1.
 */
int dispatch_list(unsigned int ifindex, struct dispatch_prog *out, int max, int *shared);

/* Whether program @prog_id runs in the dispatcher on @ifindex. */
int dispatch_has(unsigned int ifindex, __u32 prog_id);

/*
 * A dispatcher that ran program @prog_id on @ifindex in a namespace since
 * deleted: its interface is gone, but libxdp's pins of it (in the bpffs)
 * still hold its programs, and their maps. Remove them. Returns how many
 * dispatchers' pins went.
 */
int dispatch_forget(unsigned int ifindex, __u32 prog_id);

/* "XDP_PASS,XDP_DROP": the actions of @chain. */
void dispatch_chain_str(__u32 chain, char *out, size_t len);

#endif
