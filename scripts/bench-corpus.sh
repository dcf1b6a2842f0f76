#!/usr/bin/env bash
# Real projects' own test suites (cmd/agentbox/testdata/corpus/modules.txt),
# each `go test -count=1 ./...` bare and under `agentbox run --role developer
# --approve none`, interleaved (bare, inside, bare, inside...), both with warm
# build caches (a first run of each fills them). Prints each suite's median
# times and ratio, and the median of the ratios.
# Goals (issue 35): each <= 1.3x, the median <= 1.15x.
# Usage: scripts/bench-corpus.sh [RUNS]   (default 3; modules not in the
# module cache are skipped: go mod download fills it, .ci/run does)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state AGENTBOX_RUN_REGISTRY=$tmp/runs GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GOMODCACHE=${GOMODCACHE:-$(go env GOMODCACHE)}
"$AB" init "$tmp/ws" >/dev/null
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now_ms() { date +%s%3N; }
ratios=()
printf '%-34s %10s %10s %8s\n' "suite (median ms of $RUNS)" "bare" "agentbox" "ratio"
grep -v '^#' cmd/agentbox/testdata/corpus/modules.txt | while read -r mod ver _; do
  [ -n "$mod" ] || continue
  dir=$(go mod download -json "$mod@$ver" 2>/dev/null | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ]; then echo "$mod: not in the module cache, skipped"; continue; fi
  d=$tmp/ws/target/$(echo "$mod" | tr '/@' '__')
  cp -r "$dir" "$d" && chmod -R u+w "$d"
  (cd "$d" && go test -count=1 ./... >/dev/null 2>&1; "$AB" run -q --role developer --approve none -- go test -count=1 ./... >/dev/null 2>&1) || true
  b=(); s=()
  for _ in $(seq 1 "$RUNS"); do
    t0=$(now_ms); (cd "$d" && go test -count=1 ./... >/dev/null 2>&1) || true; b+=($(( $(now_ms) - t0 )))
    t0=$(now_ms); (cd "$d" && "$AB" run -q --role developer --approve none -- go test -count=1 ./... >/dev/null 2>&1) || true; s+=($(( $(now_ms) - t0 )))
  done
  bm=$(median "${b[@]}"); sm=$(median "${s[@]}")
  r=$(awk -v a="$sm" -v b="$bm" 'BEGIN{printf "%.2f", a/b}')
  printf '%-34s %10s %10s %7sx\n' "$mod" "$bm" "$sm" "$r"
  echo "$r" >> "$tmp/ratios"
done
# The projects in other languages (projects.txt), prepared by
# scripts/corpus-fetch.sh; a fresh copy per run (their builds write).
cache=${AGENTBOX_CORPUS_CACHE:-/var/cache/agentbox-corpus}
grep -v '^#' cmd/agentbox/testdata/corpus/projects.txt | while read -r kind name ver _; do
  [ -n "$kind" ] || continue
  src=$cache/$name-$ver
  if [ ! -d "$src" ]; then echo "$name: not prepared in $cache (scripts/corpus-fetch.sh), skipped"; continue; fi
  case $kind in
  debian) cmd=(/bin/sh -c './configure -q >/dev/null && make -s >/dev/null && make check') ;;
  npm) cmd=(node_modules/.bin/tape 'test/**/*.js') ;;
  esac
  d=$tmp/ws/target/$name
  b=(); s=()
  for _ in $(seq 1 "$RUNS"); do
    rm -rf "$d" && cp -a "$src" "$d"
    t0=$(now_ms); (cd "$d" && "${cmd[@]}" >/dev/null 2>&1) || true; b+=($(( $(now_ms) - t0 )))
    rm -rf "$d" && cp -a "$src" "$d"
    t0=$(now_ms); (cd "$d" && "$AB" run -q --role developer --approve none -- "${cmd[@]}" >/dev/null 2>&1) || true; s+=($(( $(now_ms) - t0 )))
  done
  bm=$(median "${b[@]}"); sm=$(median "${s[@]}")
  r=$(awk -v a="$sm" -v b="$bm" 'BEGIN{printf "%.2f", a/b}')
  printf '%-34s %10s %10s %7sx\n' "$name ($kind)" "$bm" "$sm" "$r"
  echo "$r" >> "$tmp/ratios"
done
if [ -s "$tmp/ratios" ]; then
  printf 'median of the ratios: %sx (goal <= 1.15x; each <= 1.3x)\n' "$(median $(cat "$tmp/ratios"))"
fi
