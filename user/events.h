/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * events.h - over-limit events (bpf/events.h): the reader's lease, and a
 * record as xdp-rl shows it.
 *
 * The lease (the `ev_lease` map, struct xdp_rl_ev_lease) is what makes the
 * datapath write records: until_ns on CLOCK_MONOTONIC_COARSE, the clock
 * the program reads, and the reader's pid. One reader at a time per
 * limiter: a lease still running whose holder is alive refuses another
 * reader; one whose holder is gone (killed) is taken over at once. The
 * reader moves until_ns on every EVENTS_RENEW_NS and gives it back (0) on
 * its way out; a reader killed stops costing anything when its lease runs
 * out, EVENTS_LEASE_NS later at most. Taking and giving back are done
 * under the namespace's state lock (lock.h), so two readers cannot both
 * find the lease free.
 */
#ifndef XDP_RL_EVENTS_USER_H
#define XDP_RL_EVENTS_USER_H

#include <stddef.h>

#include "limiter.h"

#define EVENTS_LEASE_NS (3ULL * 1000000000ULL)
#define EVENTS_RENEW_NS (1ULL * 1000000000ULL)

/* CLOCK_MONOTONIC_COARSE in ns: the clock of leases and records. */
__u64 events_clock_ns(void);

/*
 * Take @l's lease for this process. 0; 1 if another live process holds it
 * (its pid in *@holder); -1 on failure (errno).
 */
int events_lease_take(const struct limiter *l, __u32 *holder);
/* Move the lease on. 0; 1 if it is no longer this process's (*@holder); -1 on failure. */
int events_lease_renew(const struct limiter *l, __u32 *holder);
/* Give it back, if it is still this process's. */
void events_lease_give_back(const struct limiter *l);

/* What a record is of: "source", "aggregate", "shared", "new_sources". */
const char *events_kind_name(__u32 kind);

/*
 * The key of @ev as a prefix ("198.18.0.5/32", "198.18.0.0/24"), under
 * @l's --v4-prefix and --v6-prefix; "" for a record without one. Returns
 * whether the key holds a port (--key ...,dport), that port in *port.
 */
int events_key(const struct limiter *l, const struct xdp_rl_event *ev, char *buf, size_t len,
	       unsigned int *port);

/*
 * Send @text to syslog as the daemon facility's notice, ident xdp-rl (to
 * /dev/log; the test build's XDP_RL_SYSLOG names another socket, as for
 * audit records). 0, or -1 if it could not be sent.
 */
int events_syslog(const char *text);

#endif
