#!/usr/bin/env bash
# Instruction counts per workload run (valgrind callgrind): codemode against
# the raw QuickJS-ng floor (W1) or against peers. Repeatable where wall
# time on a noisy VM is not. Each engine runs the workload 20 and 20+N
# times (each count the median of three valgrind runs); the difference
# over N is per run.
# Usage: bench/callgrind.sh [N] [WORKLOAD] [ENGINE...]   (needs valgrind)
#   bench/callgrind.sh 200                 W1: codemode, raw floor
#   bench/callgrind.sh 50 W3 codemode goja  100 sync host calls per run
#   bench/callgrind.sh 200 X1 codemode     an Execute program making one
#                                          provider call (X0: none)
set -euo pipefail
cd "$(dirname "$0")"
N=${1:-200}
W=${2:-W1}
shift $(($# > 2 ? 2 : $#))
engines=("$@")
if [ ${#engines[@]} -eq 0 ]; then engines=(codemode "raw floor"); fi
# Go's async preemption signals occasionally upset valgrind; runs are
# retried. valgrind cannot decode RDTSCP, which Go uses where the CPU has
# it: Go is told not to.
export GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off
# One processor: with two, an idle P's scheduler spins under valgrind's
# serialized threads and now and then adds millions of instructions to a
# count (a W1 run counted 2.7 M once, 141 k on one processor).
export GOMAXPROCS=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/bench" .

# count ENGINE RUNS prints one valgrind run's total instruction count, or
# nothing if valgrind failed.
count() {
  local out="$dir/cg.out"
  if valgrind --tool=callgrind --callgrind-out-file="$out" "$dir/bench" -callgrind "$1" \
    -callgrind-workload "$W" -n "$2" >/dev/null 2>&1; then
    awk '/^summary:/ {print $2}' "$out"
  fi
}

# total ENGINE RUNS prints the program's total instruction count: the
# median of three valgrind runs. Now and then Go's scheduler spins under
# valgrind and a run exits 0 with billions of instructions more (seen on a
# third of runs on a 2-core VM); the median of three drops one such run.
# A failed run is retried, up to six tries in all.
total() {
  local counts=() tries=0 c
  while [ ${#counts[@]} -lt 3 ] && [ $tries -lt 6 ]; do
    tries=$((tries + 1))
    c=$(count "$1" "$2")
    if [ -n "$c" ]; then counts+=("$c"); fi
  done
  if [ ${#counts[@]} -eq 0 ]; then
    echo "callgrind failed for $1" >&2
    echo 0
    return
  fi
  printf '%s\n' "${counts[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

printf '| engine | instructions per %s run (callgrind, %d runs) |\n|---|---|\n' "$W" "$N"
for engine in "${engines[@]}"; do
  a=$(total "$engine" 20)
  b=$(total "$engine" $((N + 20)))
  printf '| %s | %s |\n' "$engine" $(((b - a) / N))
done
