// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cmd_output.c - how status, get and top show layers and times (see cmd_output.h). */
#include "cmd_output.h"
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
			json_u64(j, "expires_in_ms", ms_up(src->expires_in_ns[i]));
		}
		json_end(j);
	}
	json_end(j);
}
