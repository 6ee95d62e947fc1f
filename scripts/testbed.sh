#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A sender and a receiver namespace joined by a veth pair, for tests and the demo.
#
#   testbed.sh up TAG      make TAG-tx and TAG-rx, veth TAG-a (tx) <-> TAG-b (rx),
#                          198.18.0.1/24 + 2001:2::1/64 on TAG-a,
#                          198.18.0.2/24 + 2001:2::2/64 on TAG-b;
#                          prints "rx_ns tx_ns rx_if tx_if rx_mac"
#   testbed.sh down TAG    unload xdp-rl from TAG-b if loaded, delete both namespaces
#
# TAG must be short (interface names are at most 15 characters) and unique.
# Both ends have two queues, so XDP runs on both CPUs when senders are pinned
# to different CPUs. Traffic stays inside these namespaces.
set -euo pipefail

cmd=${1:-}
tag=${2:-}
{ [ -n "$cmd" ] && [ -n "$tag" ]; } || { echo "usage: $0 up|down TAG" >&2; exit 2; }
[ ${#tag} -le 12 ] || { echo "testbed.sh: TAG '$tag' is longer than 12 characters" >&2; exit 2; }

tx=$tag-tx rx=$tag-rx a=$tag-a b=$tag-b
here=$(cd "$(dirname "$0")" && pwd)
xdp_rl=${XDP_RL:-$here/../build/xdp-rl}

case $cmd in
up)
	ip netns add "$tx"
	ip netns add "$rx" || { ip netns del "$tx"; exit 1; }
	trap 'ip netns del "$tx" 2>/dev/null; ip netns del "$rx" 2>/dev/null' ERR
	ip link add "$a" netns "$tx" numtxqueues 2 numrxqueues 2 type veth \
		peer name "$b" netns "$rx" numtxqueues 2 numrxqueues 2
	for ns in "$tx" "$rx"; do
		ip -n "$ns" link set lo up
		# No router solicitations or DAD chatter in the counters.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_ra=0 \
			net.ipv6.conf.default.accept_ra=0 net.ipv6.conf.default.dad_transmits=0 \
			net.ipv6.conf.all.dad_transmits=0 net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0
	done
	ip -n "$tx" addr add 198.18.0.1/24 dev "$a"
	ip -n "$tx" addr add 2001:2::1/64 dev "$a" nodad
	ip -n "$rx" addr add 198.18.0.2/24 dev "$b"
	ip -n "$rx" addr add 2001:2::2/64 dev "$b" nodad
	ip -n "$tx" link set "$a" up
	ip -n "$rx" link set "$b" up
	mac=$(ip -n "$rx" -br link show "$b" | awk '{print $3}')
	echo "$rx $tx $b $a $mac"
	;;
down)
	if ip netns list | grep -qw "$rx"; then
		"$xdp_rl" -n "$rx" unload "$b" >/dev/null 2>&1 || true
	fi
	ip netns del "$tx" 2>/dev/null || true
	ip netns del "$rx" 2>/dev/null || true
	;;
*)
	echo "usage: $0 up|down TAG" >&2
	exit 2
	;;
esac
