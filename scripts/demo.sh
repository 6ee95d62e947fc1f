#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The demo: a flood from many spoofed sources beside a well-behaved client,
# through xdp-rl on a veth pair in two fresh namespaces. What each source got
# through is read from the receiving namespace's own nftables counters.
#
#   scripts/demo.sh [path/to/xdp-rl]      (make demo)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-$here/../build/xdp-rl}")
py=/usr/bin/python3
export XDP_RL=$bin

LIMIT=100 WINDOW=30s
FLOOD_BASE=198.19.0.1 FLOOD_SOURCES=200 FLOOD_EACH=500
GOOD=198.18.0.1 GOOD_COUNT=60

tag=demo$$
tag=${tag:0:12}
cleanup() { "$here/testbed.sh" down "$tag" >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM

read -r rx tx rx_if tx_if rx_mac < <("$here/testbed.sh" up "$tag")
echo "== namespaces $tx -> $rx over veth $tx_if -> $rx_if"

# Ground truth: the receiver's stack sees, at netdev ingress, what XDP passed.
ip netns exec "$rx" nft -f - <<EOF
table netdev demo {
	chain in {
		type filter hook ingress device "$rx_if" priority 0
		ip saddr $GOOD counter
		ip saddr $FLOOD_BASE counter
		ip saddr 198.19.0.0/16 counter
	}
}
EOF

echo "== xdp-rl -n $rx load $rx_if --limit $LIMIT --window $WINDOW"
"$bin" -n "$rx" load "$rx_if" --limit "$LIMIT" --window "$WINDOW"

echo "== sending: $FLOOD_SOURCES spoofed sources x $FLOOD_EACH packets, and $GOOD sending $GOOD_COUNT at 100 packets/s"
send() { ip netns exec "$tx" "$py" "$here/sendpkts.py" --iface "$tx_if" \
	--dst-mac "$rx_mac" --dst 198.18.0.2 --deadline 40 "$@"; }
send --src "$GOOD" --count "$GOOD_COUNT" --pps 100 >/tmp/xdp-rl-demo-good.$$ &
good_pid=$!
flood=$(send --src-range "$FLOOD_BASE+$FLOOD_SOURCES" --count "$FLOOD_EACH")
wait "$good_pid"
good=$(cat /tmp/xdp-rl-demo-good.$$)
rm -f /tmp/xdp-rl-demo-good.$$

counters=$(ip netns exec "$rx" nft -j list table netdev demo)
"$py" - "$flood" "$good" "$counters" "$LIMIT" "$FLOOD_SOURCES" <<'EOF'
import json, sys
flood, good, nft = (json.loads(a) for a in sys.argv[1:4])
limit, nsrc = int(sys.argv[4]), int(sys.argv[5])
got = [r["rule"]["expr"][-1]["counter"]["packets"]
       for r in nft["nftables"] if "rule" in r]
print()
print(f"{'source':<28}{'sent':>10}{'got through':>14}")
print(f"{'198.18.0.1 (well-behaved)':<28}{good['sent']:>10}{got[0]:>14}")
print(f"{'198.19.0.1 (one flooder)':<28}{flood['per_source']['198.19.0.1']:>10}{got[1]:>14}")
print(f"{'all %d flooders' % nsrc:<28}{flood['sent']:>10}{got[2]:>14}"
      f"   ({got[2] / nsrc:.0f} per source; limit {limit})")
EOF

echo
echo "== xdp-rl -n $rx top $rx_if --count 5"
"$bin" -n "$rx" top "$rx_if" --count 5
echo
echo "== xdp-rl -n $rx get $rx_if $GOOD"
"$bin" -n "$rx" get "$rx_if" "$GOOD"
echo
echo "== xdp-rl -n $rx stats $rx_if"
"$bin" -n "$rx" stats "$rx_if"
echo
echo "== xdp-rl -n $rx unload $rx_if; tearing the namespaces down"
"$bin" -n "$rx" unload "$rx_if"
