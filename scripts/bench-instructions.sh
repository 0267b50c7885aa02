#!/usr/bin/env bash
# Instructions per model call of the thinker bench, counted by valgrind (callgrind): the runtime
# against the bare reqwest loop spawned onto a worker. Unlike CPU time on a shared machine, an
# instruction count barely moves between runs, so small changes show.
#
# Each side runs twice, with 2 and with 4 measured rounds after the same warm-up; the difference
# between the two runs is two rounds of that side alone, so the warm-up cancels out. The sim runs
# natively in its child process and is not counted.
#
# Usage: scripts/bench-instructions.sh   (needs valgrind: apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
fi

bin=$(cargo bench -p thinkers --all-features --bench thinker --no-run --message-format=json \
    2>/dev/null | grep -o '"executable":"[^"]*thinker-[^"]*"' | tail -1 | cut -d'"' -f4 || true)
if [[ -z "$bin" || ! -x "$bin" ]]; then
    echo "could not find the thinker bench binary" >&2
    exit 1
fi
out=$(mktemp -d)

count() { # side rounds -> instructions
    THINKERS_BENCH_ROUNDS=$2 THINKERS_BENCH_ONLY=overhead THINKERS_BENCH_PROFILE=$1 \
        valgrind --tool=callgrind --callgrind-out-file="$out/$1.$2" "$bin" --bench \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
calls() { # the calls of one round, as the bench prints them
    THINKERS_BENCH_ROUNDS=1 THINKERS_BENCH_ONLY=overhead THINKERS_BENCH_PROFILE=runtime "$bin" \
        --bench 2>/dev/null | sed -n "s/^ *\([0-9]*\) calls per round/\1/p" | head -1
}

n=$(calls)
if [[ -z "$n" ]]; then
    echo "the bench did not print its number of calls per round" >&2
    exit 1
fi
declare -A got
for side in runtime bare-spawned; do
    for rounds in 2 4; do
        count "$side" "$rounds" > "$out/$side.$rounds.n" &
    done
    wait
    got[$side]=$(( $(cat "$out/$side.4.n") - $(cat "$out/$side.2.n") ))
done
rt=$(( got[runtime] / (2 * n) ))
bare=$(( got[bare-spawned] / (2 * n) ))
echo "instructions per model call ($n calls per round, callgrind):"
echo "  bare reqwest loop spawned onto a worker  $bare"
echo "  thinker turns through the runtime        $rt"
awk -v r="$rt" -v b="$bare" 'BEGIN { printf "  ratio                                    %.2fx\n", r / b }'
echo "profiles kept in $out (callgrind_annotate)"
