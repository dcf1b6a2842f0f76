#!/usr/bin/env bash
# Host caches copy-on-write (issue 47): the first build of a small real
# module's tests (`go test -run '^$'`: compile, vet, link; the tests' own
# run is left out, it starts shells, which the exec supervisor's benchmark
# measures) in a fresh workspace and a fresh --agent, against bare with the
# host's warm build and module caches; then the second run of the same
# agent. The module is agentbox's own internal/shellquote (it depends on
# mvdan.cc/sh/v3, from the module cache), copied into a new directory for
# every run, bare ones too (the go command keys a package's build by its
# directory; the second run reuses its first's). Interleaved: each round runs bare, the sandbox's first and
# the sandbox's second run, BENCH_HOSTCACHE_N rounds (default 3), medians
# and ratios. Goals: first run <= 1.3x bare, second run <= 1.1x bare.
# BENCH_HOSTCACHE_COLD=1 (the default) also times one first run with
# --no-host-caches and the host's module download cache as a file://
# GOPROXY, the figure before (a cold agent build cache; slow: it compiles
# the standard library). Checkpoints are off: their cost is
# measured by bench-workspace.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${BENCH_HOSTCACHE_N:-3}
COLD=${BENCH_HOSTCACHE_COLD:-1}
PKG=./internal/shellquote
make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state
git archive --format=tar HEAD > "$tmp/src.tar"
src() { mkdir -p "$1" && tar -xf "$tmp/src.tar" -C "$1"; }
ms() { local s e; s=$(date +%s%N); "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; echo "bench-hostcache: $* failed" >&2; exit 1; }; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
box() { # box WS AGENT [FLAGS...]: go test in WS/target/src as AGENT
  local ws=$1 agent=$2; shift 2
  (cd "$ws/target/src" && ms "$AB" run --quiet --role developer --no-limits --no-user-policy --approve none \
    --checkpoints off --audit "$tmp/audit.jsonl" --workspace "$ws" --agent "$agent" "$@" -- go test -count=1 -run '^$' "$PKG")
}
# Warm the host's caches for this module, as a developer's would be.
src "$tmp/warm" && (cd "$tmp/warm" && go test -count=1 "$PKG" >/dev/null)
for k in bare first second; do : > "$tmp/t_$k"; done
for i in $(seq "$N"); do
  src "$tmp/bare$i" && (cd "$tmp/bare$i" && ms go test -count=1 -run '^$' "$PKG") >> "$tmp/t_bare"
  "$AB" init "$tmp/ws$i" >/dev/null && src "$tmp/ws$i/target/src"
  box "$tmp/ws$i" "a$i" >> "$tmp/t_first"
  box "$tmp/ws$i" "a$i" >> "$tmp/t_second"
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
b=$(med "$tmp/t_bare"); f=$(med "$tmp/t_first"); s=$(med "$tmp/t_second")
printf 'load average: %s; %s rounds; go test -count=1 -run ^$ %s (agentbox %s), host GOCACHE %s\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$N" "$PKG" "$(git rev-parse --short HEAD)" "$(go env GOCACHE)"
printf '%-52s %7d ms vs %7d ms  %.2fx  (goal <= 1.3x)\n' "first run, fresh workspace and agent, vs bare warm" "$f" "$b" "$(echo "$f/$b" | bc -l)"
printf '%-52s %7d ms vs %7d ms  %.2fx  (goal <= 1.1x)\n' "second run of the same agent, vs bare warm" "$s" "$b" "$(echo "$s/$b" | bc -l)"
rf=$(bench_ratio "$f" "$b"); rs=$(bench_ratio "$s" "$b")
bench_goal hostcache-first "${rf}x ($f vs $b ms, $N rounds)" "bare go test, host caches warm" "$(bench_met_ratio "$f" "$b" 1.3)"
bench_goal hostcache-second "${rs}x ($s vs $b ms)" "the same bare runs" "$(bench_met_ratio "$s" "$b" 1.1)"
if [ "$COLD" = 1 ]; then
  # Before: the agent's own build cache, cold; modules from the host's
  # download cache as a file:// GOPROXY (what --host-caches gave before
  # the layers).
  dl=$(go env GOMODCACHE)/cache/download
  "$AB" init "$tmp/wscold" >/dev/null && src "$tmp/wscold/target/src"
  cold=$(GOPROXY=file://$dl box "$tmp/wscold" cold --no-host-caches --ro "$dl")
  printf '%-52s %7d ms vs %7d ms  %.2fx  (before: the agent cache cold)\n' "first run with --no-host-caches (one), vs bare warm" "$cold" "$b" "$(echo "$cold/$b" | bc -l)"
fi
