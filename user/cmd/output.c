// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd/output.c - how status, get and top show layers and times (see cmd/output.h). */
#include "output.h"
#include <stdio.h>

#include "options.h"

__u64 ms_up(__u64 ns)
{
	return (ns + 999999) / 1000000;
}

void layers_json(struct json *j, const struct xdp_rl_layer *lay, __u32 n, const struct source *src)
{
	char w[32];
	__u32 i;

	json_arr(j, "layers");
	for (i = 0; i < n; i++) {
		fmt_duration(lay[i].window_ns, w, sizeof(w));
		json_obj(j, NULL);
		json_u64(j, "limit", lay[i].limit);
		json_str(j, "window", w);
		json_u64(j, "window_ns", lay[i].window_ns);
		if (src) {
			json_u64(j, "count", src->count[i]);
			json_u64(j, "count_error_max_packets", src->count_error_packets[i]);
			json_u64(j, "remote", src->remote[i]);
			json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[i]));
		}
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
