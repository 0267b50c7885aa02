#!/usr/bin/env bash
# Instructions per model call of the thinker bench, counted by valgrind (callgrind): the runtime
# against the bare reqwest loop spawned onto a worker. Unlike CPU time on a shared machine, an
# instruction count barely moves between runs, so small changes show.
#
# Each side runs twice, with 2 and with 4 measured rounds after the same warm-up; the difference
# between the two runs is two rounds of that side alone, so the warm-up cancels out. The sim runs
# natively in its child process and is not counted.
#
# With --cache it runs cachegrind's cache simulation instead and adds the first-level cache
# misses per call (instruction and data), which is where CPU time parts from the instruction
# count: a call that misses the caches more costs more time per instruction. The simulated last
# level is given this machine's second-level cache (its size, ways and line from sysfs), not the
# shared third level valgrind would pick: a miss there is what makes a call wait longest, and it
# counts how much of a call's data was not touched recently.
#
# Usage: scripts/bench-instructions.sh [--cache]   (needs valgrind: apt-get install valgrind)
#        THINKERS_BENCH_BIN=path/to/thinker-bench scripts/bench-instructions.sh   (a build kept aside)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=false
case "${1:-}" in
    "") ;;
    --cache) cache=true ;;
    *)
        echo "usage: scripts/bench-instructions.sh [--cache]" >&2
        exit 2
        ;;
esac

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
fi

# THINKERS_BENCH_BIN names a bench binary already built (to compare two builds of it).
bin=${THINKERS_BENCH_BIN:-}
if [[ -z "$bin" ]]; then
    bin=$(cargo bench -p thinkers --all-features --bench thinker --no-run --message-format=json \
        2>/dev/null | grep -o '"executable":"[^"]*thinker-[^"]*"' | tail -1 | cut -d'"' -f4 || true)
fi
if [[ -z "$bin" || ! -x "$bin" ]]; then
    echo "could not find the thinker bench binary" >&2
    exit 1
fi
out=$(mktemp -d)

# With --cache, the simulated last level is this machine's second-level cache when sysfs
# describes it (valgrind's own choice, the shared third level, is too large to miss).
ll=()
ll_label="last-level cache"
l2=/sys/devices/system/cpu/cpu0/cache/index2
if $cache && [[ -r $l2/level && $(cat "$l2/level") == 2 ]]; then
    size=$(cat "$l2/size") ways=$(cat "$l2/ways_of_associativity")
    case "$size" in
        *K) bytes=$(( ${size%K} * 1024 )) ;;
        *M) bytes=$(( ${size%M} * 1024 * 1024 )) ;;
        *) bytes=$size ;;
    esac
    ll=(--LL="$bytes,$ways,$(cat "$l2/coherency_line_size")")
    ll_label="last-level cache (simulated as this machine's $size $ways-way second level)"
fi

ratio() { # runtime bare -> the ratio line, when the bare count is above zero
    awk -v r="$1" -v b="$2" 'BEGIN {
        if (b > 0) printf "  ratio                                    %.2fx\n", r / b
    }'
}

count() { # side rounds -> instructions [I1-misses D1-misses LL-misses]
    if $cache; then
        THINKERS_BENCH_ROUNDS=$2 THINKERS_BENCH_PROFILE=$1 \
            valgrind --tool=cachegrind --cache-sim=yes "${ll[@]}" --cachegrind-out-file="$out/$1.$2" \
            "$bin" --bench 2>&1 >/dev/null | awk '
                $2 == "I" && $3 == "refs:" { gsub(",", "", $4); i = $4 }
                $2 == "I1" && $3 == "misses:" { gsub(",", "", $4); i1 = $4 }
                $2 == "D1" && $3 == "misses:" { gsub(",", "", $4); d1 = $4 }
                $2 == "LL" && $3 == "misses:" { gsub(",", "", $4); l = $4 }
                END { print i, i1, d1, l }'
    else
        THINKERS_BENCH_ROUNDS=$2 THINKERS_BENCH_PROFILE=$1 \
            valgrind --tool=callgrind --callgrind-out-file="$out/$1.$2" "$bin" --bench \
            2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    fi
}
calls() { # the calls of one round, as the bench prints them
    THINKERS_BENCH_ROUNDS=1 THINKERS_BENCH_PROFILE=runtime "$bin" \
        --bench 2>/dev/null | sed -n "s/^ *\([0-9]*\) calls per round/\1/p" | head -1
}

n=$(calls)
if [[ -z "$n" ]]; then
    echo "the bench did not print its number of calls per round" >&2
    exit 1
fi
# Per call, for each side: the 4-round run minus the 2-round run, over the two rounds' calls.
per_call() { # side column -> count per call
    local a b
    a=$(awk -v c="$2" '{ print $c }' "$out/$1.4.n")
    b=$(awk -v c="$2" '{ print $c }' "$out/$1.2.n")
    if [[ -z "$a" || -z "$b" ]]; then
        echo "valgrind reported no count for $1 (see $out)" >&2
        exit 1
    fi
    echo $(( (a - b) / (2 * n) ))
}
for side in runtime bare-spawned; do
    for rounds in 2 4; do
        count "$side" "$rounds" > "$out/$side.$rounds.n" &
    done
    wait
done
rt=$(per_call runtime 1)
bare=$(per_call bare-spawned 1)
tool=callgrind
$cache && tool="cachegrind, cache simulation"
echo "instructions per model call ($n calls per round, $tool):"
echo "  bare reqwest loop spawned onto a worker  $bare"
echo "  thinker turns through the runtime        $rt"
ratio "$rt" "$bare"
if $cache; then
    for col in 2 3 4; do
        case $col in
            2) name="first-level instruction-cache" ;;
            3) name="first-level data-cache" ;;
            4) name=$ll_label ;;
        esac
        r=$(per_call runtime "$col")
        b=$(per_call bare-spawned "$col")
        echo "$name misses per model call:"
        echo "  bare reqwest loop spawned onto a worker  $b"
        echo "  thinker turns through the runtime        $r"
        ratio "$r" "$b"
    done
    echo "profiles kept in $out (cg_annotate)"
else
    echo "profiles kept in $out (callgrind_annotate)"
fi
