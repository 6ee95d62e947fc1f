/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cmd/output.h - how status, get and top show layers and times. */
#ifndef XDP_RL_CMD_OUTPUT_H
#define XDP_RL_CMD_OUTPUT_H

#include "json.h"
#include "sources.h"

/* ns, rounded up to ms. */
__u64 ms_up(__u64 ns);

/*
 * "layers": [...] of @n layers @lay; with @src, each with its window's count
 * and time left.
 */
void layers_json(struct json *j, const struct xdp_rl_layer *lay, __u32 n, const struct source *src);

/* "select": { "proto": ..., "dports": [...], "syn": ... }, or null for every packet. */
void select_json(struct json *j, const char *key, const struct xdp_rl_select *sel);

#endif
