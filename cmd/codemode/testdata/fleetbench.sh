#!/usr/bin/env bash
# Throughput of codemode batch in process and on 1, 2 and 3 daemons of this
# machine (codemode serve, each pinned with taskset to its share of the
# cores), for a CPU-bound and an I/O-bound job mix (issue 49).
#   cmd/codemode/testdata/fleetbench.sh [JOBS]
set -euo pipefail
jobs=${1:-2000}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$(dirname "$0")/.."
go build -o "$dir/codemode" .
cores=$(nproc)
for i in $(seq 0 $((jobs - 1))); do
	echo "{\"id\": $i, \"code\": \"let s = 0; for (let i = 0; i < 300000; i++) s += i % 7; return s\"}"
done > "$dir/cpu.jsonl"
for i in $(seq 0 $((jobs - 1))); do
	echo "{\"id\": $i, \"code\": \"await new Promise((r) => setTimeout(r, 20)); return $i\"}"
done > "$dir/io.jsonl"
rate() { sed -n 's/^throughput *\([0-9]*\) scripts\/s.*/\1/p' "$1"; }
run() { # name, extra flags
	local name=$1; shift
	for mix in cpu io; do
		local j=8; [ "$mix" = io ] && j=256
		"$dir/codemode" batch -j "$j" --progress never -o /dev/null "$@" "$dir/$mix.jsonl" 2> "$dir/out"
		printf '%-12s %-4s %6s scripts/s\n' "$name" "$mix" "$(rate "$dir/out")"
	done
}
run local
for n in 1 2 3; do
	addrs=()
	for k in $(seq 1 "$n"); do
		port=$((17070 + k))
		cpu=$(((k - 1) % cores))
		[ "$n" = 1 ] && cpu="0-$((cores - 1))"
		taskset -c "$cpu" "$dir/codemode" serve --listen "127.0.0.1:$port" 2> "$dir/serve$k.log" &
		addrs+=("127.0.0.1:$port")
	done
	sleep 1
	run "$n daemon(s)" --remote "$(IFS=,; echo "${addrs[*]}")"
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
done
