#!/usr/bin/env bash
# Launch against the build of a base commit (default a3d7440, the start of
# round four; BENCH_BASE_COMMIT=...), built here in a worktree and timed
# interleaved with this tree's build: `agentbox --version` (the process's
# start alone: runtime, package initialisers, page-in) and `agentbox run
# --role developer --no-limits -- /bin/true` (checkpoints on), BENCH_BASE_N rounds
# (default 40), medians and ratios. Goal (issue 47): run <= 1.0x the base.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
BASE=${BENCH_BASE_COMMIT:-a3d7440}
N=${BENCH_BASE_N:-40}
make -s build
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach -q "$tmp/src" "$BASE"
mkdir -p "$tmp/bin"
(cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/agentbox" ./cmd/agentbox &&
  CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/agentbox-helper" ./cmd/agentbox-helper)
# Each build keeps its own user cache (the exec supervisor's identity
# cache, keyed by the programs each build polices), its own state (the
# checkpoint store and change journal) and its own workspace, as a user of
# either build would: a shared cache was rewritten by each build in turn,
# and every timed launch of both rescanned $PATH and re-read build IDs
# (~3 ms of CPU); a shared state and workspace let one build's checkpoints
# and journal stand in the other's way, so neither took its usual path.
for b in base cur; do
  ab=$tmp/bin/agentbox; [ $b = cur ] && ab=$PWD/bin/agentbox
  mkdir -p "$tmp/cache_$b" "$tmp/state_$b"
  "$PWD/bin/agentbox" init "$tmp/ws_$b" >/dev/null
  XDG_CACHE_HOME=$tmp/cache_$b XDG_STATE_HOME=$tmp/state_$b "$ab" run --quiet --role developer --no-limits --workspace "$tmp/ws_$b" --no-user-policy --approve none --audit "$tmp/$b.jsonl" -- /bin/true >/dev/null 2>&1 || true
done
us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
for b in base cur; do : > "$tmp/v_$b"; : > "$tmp/r_$b"; done
# The two builds take turns going first (base cur, then cur base, ...):
# a launch right after the other build's differs from one right after its
# own `--version` (page cache, the other build's journal finishing its
# run), and a fixed order gave that difference to one build every round
# (1.06x with base first each round against 0.97x with no --version
# between, same trees, back to back).
for i in $(seq "$N"); do
  order="base cur"; [ $((i % 2)) = 0 ] && order="cur base"
  for b in $order; do
    ab=$tmp/bin/agentbox; [ $b = cur ] && ab=$PWD/bin/agentbox
    export XDG_CACHE_HOME=$tmp/cache_$b XDG_STATE_HOME=$tmp/state_$b
    us "$ab" --version >> "$tmp/v_$b"
    us "$ab" run --quiet --role developer --no-limits --workspace "$tmp/ws_$b" --no-user-policy --approve none --audit "$tmp/$b.jsonl" -- /bin/true >> "$tmp/r_$b"
  done
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
vb=$(med "$tmp/v_base"); vc=$(med "$tmp/v_cur"); rb=$(med "$tmp/r_base"); rc=$(med "$tmp/r_cur")
printf 'load average: %s; binaries: %s MB (%s) and %s MB (this tree)\n' "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(( $(stat -c %s "$tmp/bin/agentbox") >> 20 ))" "$BASE" "$(( $(stat -c %s bin/agentbox) >> 20 ))"
printf '%-44s %9.2f ms vs %9.2f ms  %.2fx\n' "agentbox --version (start alone), vs $BASE" "$(echo "$vc/1000" | bc -l)" "$(echo "$vb/1000" | bc -l)" "$(echo "$vc/$vb" | bc -l)"
printf '%-44s %9.2f ms vs %9.2f ms  %.2fx  (goal <= 1.0x)\n' "agentbox run -- /bin/true, vs $BASE" "$(echo "$rc/1000" | bc -l)" "$(echo "$rb/1000" | bc -l)" "$(echo "$rc/$rb" | bc -l)"
r=$(bench_ratio "$rc" "$rb")
bench_goal base-true "${r}x ($(bench_ratio "$rc" 1000) vs $(bench_ratio "$rb" 1000) ms, $N rounds; --version $(bench_ratio "$vc" "$vb")x)" "$BASE built in the same run" "$(bench_met_ratio "$rc" "$rb" 1.0)"
