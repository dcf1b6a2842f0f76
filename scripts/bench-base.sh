#!/usr/bin/env bash
# Launch against the build of a base commit (default a3d7440, the start of
# round four; BENCH_BASE_COMMIT=...), built here in a worktree and timed
# interleaved with this tree's build: `agentbox --version` (the process's
# start alone: runtime, package initialisers, page-in) and `agentbox run
# --role developer --no-limits -- /bin/true` (checkpoints on), BENCH_BASE_N rounds
# (default 100), medians and ratios. Goal (issue 47): run <= 1.0x the base.
#
# Both builds are timed as installed (`install -m 0755`, what `make
# install` does) and, as a figure beside it, as the linker left them in
# place. The same binary starts slower from the file the Go linker wrote
# than from an installed copy of it while that file's pages are the ones
# the linker wrote: 3-4 % a launch for both builds built fresh, 14 % (20.6
# vs 17.8 ms; --version 8.7 vs 6.0 ms) for a bin/agentbox used for hours
# (docs/benchmarks.md). Timed as linked only, the comparison measured in
# part how each file came to be.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
BASE=${BENCH_BASE_COMMIT:-a3d7440}
N=${BENCH_BASE_N:-100}
make -s build
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach -q "$tmp/src" "$BASE"
mkdir -p "$tmp/bin"
(cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/agentbox" ./cmd/agentbox &&
  CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/agentbox-helper" ./cmd/agentbox-helper)
# The installed copies (each next to its own helper, as installed).
for b in base cur; do
  from=$tmp/bin; [ $b = cur ] && from=$PWD/bin
  mkdir -p "$tmp/inst_$b"
  install -m 0755 "$from/agentbox" "$from/agentbox-helper" "$tmp/inst_$b/"
done
# Each build keeps its own user cache (the exec supervisor's identity
# cache, keyed by the programs each build polices), its own state (the
# checkpoint store and change journal) and its own workspace, as a user of
# either build would: a shared cache was rewritten by each build in turn,
# and every timed launch of both rescanned $PATH and re-read build IDs
# (~3 ms of CPU); a shared state and workspace let one build's checkpoints
# and journal stand in the other's way, so neither took its usual path.
# The installed and the linked binary of a build share them (same code).
for b in base cur; do
  mkdir -p "$tmp/cache_$b" "$tmp/state_$b"
  "$PWD/bin/agentbox" init "$tmp/ws_$b" >/dev/null
done
bin() { # bin BUILD inst|linked: the binary timed
  case $1/$2 in
  base/linked) echo "$tmp/bin/agentbox" ;;
  cur/linked) echo "$PWD/bin/agentbox" ;;
  *) echo "$tmp/inst_$1/agentbox" ;;
  esac
}
runit() { # runit BUILD BINARY: one launch of /bin/true
  XDG_CACHE_HOME=$tmp/cache_$1 XDG_STATE_HOME=$tmp/state_$1 "$2" run --quiet --role developer --no-limits \
    --workspace "$tmp/ws_$1" --no-user-policy --approve none --audit "$tmp/$1.jsonl" -- /bin/true >/dev/null 2>&1 || true
}
for b in base cur; do
  runit $b "$(bin $b inst)"
  runit $b "$(bin $b linked)"
done
# us CMD...: microseconds CMD took (bash's clock: no process started
# around it to read one).
us() {
  local s=$EPOCHREALTIME e
  "$@" >/dev/null 2>&1 || true
  e=$EPOCHREALTIME
  echo $((${e/./} - ${s/./}))
}
for b in base cur; do : >"$tmp/v_$b"; : >"$tmp/r_$b"; : >"$tmp/l_$b"; done
# The two builds take turns going first (base cur, then cur base, ...):
# a launch right after the other build's differs from one right after its
# own (page cache, the other build's journal finishing its run), and a
# fixed order gave that difference to one build every round (1.06x with
# base first each round against 0.97x with no --version between, same
# trees, back to back).
for i in $(seq "$N"); do
  order="base cur"; [ $((i % 2)) = 0 ] && order="cur base"
  for b in $order; do
    export XDG_CACHE_HOME=$tmp/cache_$b XDG_STATE_HOME=$tmp/state_$b
    us "$(bin $b inst)" --version >>"$tmp/v_$b"
    us runit $b "$(bin $b inst)" >>"$tmp/r_$b"
    us runit $b "$(bin $b linked)" >>"$tmp/l_$b"
  done
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
vb=$(med "$tmp/v_base"); vc=$(med "$tmp/v_cur"); rb=$(med "$tmp/r_base"); rc=$(med "$tmp/r_cur")
lb=$(med "$tmp/l_base"); lc=$(med "$tmp/l_cur")
printf 'load average: %s; binaries: %s MB (%s) and %s MB (this tree)\n' "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(( $(stat -c %s "$tmp/bin/agentbox") >> 20 ))" "$BASE" "$(( $(stat -c %s bin/agentbox) >> 20 ))"
printf '%-48s %9.2f ms vs %9.2f ms  %.2fx\n' "agentbox --version (start alone), vs $BASE" "$(echo "$vc/1000" | bc -l)" "$(echo "$vb/1000" | bc -l)" "$(echo "$vc/$vb" | bc -l)"
printf '%-48s %9.2f ms vs %9.2f ms  %.2fx  (goal <= 1.0x)\n' "agentbox run -- /bin/true, vs $BASE" "$(echo "$rc/1000" | bc -l)" "$(echo "$rb/1000" | bc -l)" "$(echo "$rc/$rb" | bc -l)"
printf '%-48s %9.2f ms vs %9.2f ms  %.2fx\n' "  the same, each binary as the linker wrote it" "$(echo "$lc/1000" | bc -l)" "$(echo "$lb/1000" | bc -l)" "$(echo "$lc/$lb" | bc -l)"
r=$(bench_ratio "$rc" "$rb")
bench_goal base-true "${r}x ($(bench_ratio "$rc" 1000) vs $(bench_ratio "$rb" 1000) ms, installed, $N rounds; as linked $(bench_ratio "$lc" "$lb")x; --version $(bench_ratio "$vc" "$vb")x)" "$BASE built in the same run" "$(bench_met_ratio "$rc" "$rb" 1.0)"
