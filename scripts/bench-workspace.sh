#!/usr/bin/env bash
# Launch against the workspace's size with checkpoints on (issue 47):
# `agentbox run --role developer -- /bin/true` in an empty workspace, one
# of 12,000 files and a generated one of 100,000, interleaved (one run of
# each per round, BENCH_WS_N rounds, default 40), medians and ratios; and
# the end of a run that changed one file against one that changed none
# (`sh -c` both, same workspace). The first run in each workspace (the
# whole walk, and the change journal started at its end) is not timed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${BENCH_WS_N:-40}
make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state
gen() { # gen DIR DIRS-A DIRS-B FILES: DIRS-A*DIRS-B directories of FILES files
  python3 - "$@" <<'PY'
import os, sys
root, A, B, C = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for a in range(A):
    for b in range(B):
        d = os.path.join(root, "src", "m%d" % a, "p%d" % b)
        os.makedirs(d, exist_ok=True)
        for c in range(C):
            with open(os.path.join(d, "f%d.go" % c), "w") as f:
                f.write("package p%d // %d\n" % (b, c))
PY
}
for w in empty 12k 100k; do "$AB" init "$tmp/$w" >/dev/null; done
gen "$tmp/12k/target/proj" 20 20 30
gen "$tmp/100k/target/proj" 50 40 50
AUDIT=$tmp/audit.jsonl
dev() { echo "$AB" run --quiet --role developer --workspace "$tmp/$1" --no-user-policy --approve none --audit "$AUDIT" --no-limits --; }
k=0
for w in empty 12k 100k; do
  # the first run walks and hashes; its end starts the journal, which
  # compares the tree once: wait for its socket
  $(dev $w) /bin/true 2>/dev/null
  k=$((k + 1))
  for _ in $(seq 300); do
    [ "$(ls "$tmp"/state/agentbox/checkpoints/*/journal.sock 2>/dev/null | wc -l)" -ge "$k" ] && break
    sleep 0.2
  done
  $(dev $w) /bin/true 2>/dev/null
done
: > "$tmp/t_empty"; : > "$tmp/t_12k"; : > "$tmp/t_100k"; : > "$tmp/t_none"; : > "$tmp/t_one"
us() { local s e; s=$(date +%s%N); "$@" 2>/dev/null || true; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
# endus RUN...: the run's end checkpoint (from --debug: "cleaned up" to
# "end checkpoint taken"), in µs
endus() {
  "$@" 2>&1 | awk '/ cleaned up/ {c=$2} / end checkpoint taken/ {e=$2} END {sub("ms","",c); sub("ms","",e); printf "%d\n", (e-c)*1000}'
}
devd() { echo "$AB" run --debug --quiet --role developer --workspace "$tmp/$1" --no-user-policy --approve none --audit "$AUDIT" --no-limits --; }
F=$tmp/12k/target/proj/src/m1/p1/f1.go
one() {
  case $1 in
  0) us $(dev empty) /bin/true >> "$tmp/t_empty" ;;
  1) us $(dev 12k) /bin/true >> "$tmp/t_12k" ;;
  2) us $(dev 100k) /bin/true >> "$tmp/t_100k" ;;
  3) endus $(devd 12k) /bin/sh -c ':' >> "$tmp/t_none" ;;
  4) endus $(devd 12k) /bin/sh -c "echo \$\$ > $F" >> "$tmp/t_one" ;;
  esac
}
# interleaved, the order rotated each round (no row always first)
for r in $(seq "$N"); do
  for k in 0 1 2 3 4; do one $(( (k + r) % 5 )); done
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
e=$(med "$tmp/t_empty"); b=$(med "$tmp/t_12k"); h=$(med "$tmp/t_100k"); n0=$(med "$tmp/t_none"); n1=$(med "$tmp/t_one")
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-58s %9.2f ms\n' "launch, empty workspace (checkpoints on)" "$(echo "$e/1000" | bc -l)"
printf '%-58s %9.2f ms  %.2fx empty  (goal <= 1.1x)\n' "launch, 12,000-file workspace" "$(echo "$b/1000" | bc -l)" "$(echo "$b/$e" | bc -l)"
printf '%-58s %9.2f ms  %.2fx empty  (goal <= 1.2x)\n' "launch, 100,000-file workspace" "$(echo "$h/1000" | bc -l)" "$(echo "$h/$e" | bc -l)"
printf '%-58s %9.2f ms\n' "end checkpoint, run that changed nothing (12k)" "$(echo "$n0/1000" | bc -l)"
printf '%-58s %9.2f ms  %+.2f ms  (goal <= +5 ms)\n' "end checkpoint, run that changed one file (12k)" "$(echo "$n1/1000" | bc -l)" "$(echo "($n1-$n0)/1000" | bc -l)"
r12=$(bench_ratio "$b" "$e"); r100=$(bench_ratio "$h" "$e"); d=$(awk -v a="$n1" -v b="$n0" 'BEGIN{printf "%+.2f", (a-b)/1000}')
bench_goal ws-12k "${r12}x ($(bench_ratio "$b" 1000) vs $(bench_ratio "$e" 1000) ms, $N rounds)" "empty workspace, same rounds" "$(bench_met_ratio "$b" "$e" 1.1)"
bench_goal ws-100k "${r100}x ($(bench_ratio "$h" 1000) ms)" "empty workspace, same rounds" "$(bench_met_ratio "$h" "$e" 1.2)"
bench_goal ws-end "$d ms ($(bench_ratio "$n1" 1000) vs $(bench_ratio "$n0" 1000) ms)" "a run that changed nothing (12k files)" "$(bench_met "$(awk -v a="$n1" -v b="$n0" 'BEGIN{print (a-b)/1000}')" 5)"
# the journals started here follow $tmp: they exit when it is removed
