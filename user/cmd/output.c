// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/output.c - how status, get and top show layers and times (see cmd/output.h). */
#include "output.h"
#include <stdio.h>

#include "options.h"

__u64 ms_up(__u64 ns)
{
	return (ns + 999999) / 1000000;
}

/* A window layer's fields, layer @i of @src's if given. */
static void window_json(struct json *j, const struct xdp_rl_layer *l, const struct source *src,
			__u32 i)
{
	char w[32];

	fmt_duration(l->window_ns, w, sizeof(w));
	json_str(j, "kind", "window");
	json_u64(j, "limit", l->limit);
	json_str(j, "window", w);
	json_u64(j, "window_ns", l->window_ns);
	if (!src)
		return;
	json_u64(j, "count", src->count[i]);
	json_u64(j, "count_error_max_packets", src->count_error_packets[i]);
	json_u64(j, "remote", src->remote[i]);
	json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[i]));
}

/*
 * A rate layer's (--rate N/DUR --burst B): N per DUR, its burst; with
 * @src, what the key may send at once, when one unit passes, the drops of
 * its episode, and (as a window's count and end) what it owes and when it
 * owes nothing.
 */
static void rate_json(struct json *j, const struct xdp_rl_layer *l, const struct source *src,
		      __u32 i)
{
	char w[32];

	fmt_duration(l->window_ns, w, sizeof(w));
	json_str(j, "kind", "rate");
	json_u64(j, "rate", l->limit);
	json_str(j, "per", w);
	/* DUR in ms: a whole number but for a DUR with a fraction of a ms (1500us). */
	json_ms(j, "per_ms", l->window_ns);
	json_u64(j, "burst", l->burst);
	json_u64(j, "limit", l->limit);
	json_str(j, "window", w);
	json_u64(j, "window_ns", l->window_ns);
	if (!src)
		return;
	json_u64(j, "tokens", src->tokens[i]);
	json_u64(j, "next_pass_in_ms", ms_up(src->next_pass_ns[i]));
	json_u64(j, "dropped", src->dropped[i]);
	json_u64(j, "dropped_error_max_packets", src->count_error_packets[i]);
	json_u64(j, "owes", src->count[i]);
	json_u64(j, "owes_nothing_in_ms", ms_up(src->expires_in_ns[i]));
}

void layers_json(struct json *j, const struct xdp_rl_layer *lay, __u32 n, const struct source *src)
{
	__u32 i;

	json_arr(j, "layers");
	for (i = 0; i < n; i++) {
		json_obj(j, NULL);
		if (xdp_rl_is_rate(&lay[i]))
			rate_json(j, &lay[i], src, i);
		else
			window_json(j, &lay[i], src, i);
		json_end(j);
	}
	json_end(j);
}

void select_json(struct json *j, const char *key, const struct xdp_rl_select *sel)
{
	char r[16];
	int i;

	if (xdp_rl_select_all(sel)) {
		json_null(j, key);
		return;
	}
	json_obj(j, key);
	json_str(j, "proto", word_name(proto_words, sel->proto));
	json_arr(j, "dports");
	for (i = 0; i < sel->nports; i++) {
		if (sel->port_lo[i] == sel->port_hi[i])
			snprintf(r, sizeof(r), "%u", sel->port_lo[i]);
		else
			snprintf(r, sizeof(r), "%u-%u", sel->port_lo[i], sel->port_hi[i]);
		json_str(j, NULL, r);
	}
	json_end(j);
	json_bool(j, "syn", sel->syn);
	json_end(j);
}
