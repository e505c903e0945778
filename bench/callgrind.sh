#!/usr/bin/env bash
# Instruction counts per W1 call (valgrind callgrind): codemode against the
# raw QuickJS-ng floor. Repeatable where wall time on a noisy VM is not.
# Each engine runs W1 20 and 20+N times; the difference over N is per call.
# Usage: bench/callgrind.sh [N]   (needs valgrind)
set -euo pipefail
cd "$(dirname "$0")"
N=${1:-200}
# Go's async preemption signals occasionally upset valgrind; runs are retried.
export GODEBUG=asyncpreemptoff=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/bench" .

# total ENGINE RUNS prints the program's total instruction count.
total() {
  local out="$dir/cg.out"
  for _ in 1 2 3; do
    if valgrind --tool=callgrind --callgrind-out-file="$out" "$dir/bench" -callgrind "$1" -n "$2" >/dev/null 2>&1; then
      awk '/^summary:/ {print $2}' "$out"
      return
    fi
  done
  echo "callgrind failed for $1" >&2
  echo 0
}

printf '| engine | instructions per W1 call (callgrind, %d calls) |\n|---|---|\n' "$N"
for engine in codemode "raw floor"; do
  a=$(total "$engine" 20)
  b=$(total "$engine" $((N + 20)))
  printf '| %s | %s |\n' "$engine" $(((b - a) / N))
done
