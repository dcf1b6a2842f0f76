#!/usr/bin/env bash
# Script-tool benchmark (issue 43): since a #! script is decided as the
# script (its path from AT_EXECFN, its interpreter words, its links), each
# script start costs a little more to decide. This compares, interleaved in
# the same rounds, the current build against BASE (the commit before that
# change) on script-heavy work:
#
#   1. a shell loop of NEXEC starts of a #!/bin/sh tool in target/
#   2. `make -j2` of NRULES targets, each recipe running that tool
#
# Prints the median of RUNS runs of each and current/base. Goal: <= 1.05.
#
# Usage: scripts/bench-scripts.sh          (needs root and git history)
#        RUNS=9 NEXEC=500 BASE=<commit> scripts/bench-scripts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
NEXEC=${NEXEC:-500}
NRULES=${NRULES:-200}
BASE=${BASE:-09dde68}

command -v make >/dev/null || { echo "bench-scripts: make not installed, skipped"; exit 0; }
if [ "$(id -u)" != 0 ]; then echo "bench-scripts: needs root (cgroups for the default role), skipped"; exit 0; fi
if ! git cat-file -e "$BASE^{commit}" 2>/dev/null; then echo "bench-scripts: base commit $BASE not in this clone, skipped"; exit 0; fi

make -s build
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
git worktree add --detach -q "$tmp/base" "$BASE"
# Each build with its own agentbox-helper beside it.
mkdir -p "$tmp/bin-base" "$tmp/bin-cur"
(cd "$tmp/base" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin-base/agentbox" ./cmd/agentbox &&
  CGO_ENABLED=0 go build -trimpath -o "$tmp/bin-base/agentbox-helper" ./cmd/agentbox-helper)
cp bin/agentbox bin/agentbox-helper "$tmp/bin-cur/"

ws=$tmp/ws
"$tmp/bin-cur/agentbox" init "$ws" >/dev/null
proj=$ws/target/sproj
mkdir -p "$proj"
printf '#!/bin/sh\n: "$@"\n' >"$proj/tool"
chmod 755 "$proj/tool"
printf 'i=0\nwhile [ $i -lt %d ]; do ./tool x; i=$((i+1)); done\n' "$NEXEC" >"$proj/loop.sh"
{
  printf 'all:'
  for i in $(seq 1 "$NRULES"); do printf ' t%d' "$i"; done
  printf '\nt%%:\n\t@./tool $@\n.PHONY: all\n'
} >"$proj/Makefile"
cat >"$tmp/bench.yaml" <<'EOF'
version: 1
rules:
  - {decision: allow, command: sh loop.sh}
  - {decision: allow, command: tool}
EOF

run() { # binary, work...
  local ab=$1; shift
  (cd "$proj" && "$ab" run --role developer --workspace "$ws" --no-user-policy --policy "$tmp/bench.yaml" \
    --approve none --checkpoints off --audit "$tmp/audit.jsonl" --quiet -- "$@") >/dev/null 2>"$tmp/err"
}
t() { local s e; s=$(date +%s%N); "$@"; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for work in loop make; do
  case $work in
    loop) args=(sh loop.sh); what="$NEXEC starts of a #! tool" ;;
    make) args=(make -s -j2 -B); what="make -j2, $NRULES recipes" ;;
  esac
  : >"$tmp/cur.t"; : >"$tmp/base.t"
  for b in cur base; do # warm, and the work must succeed under both, nothing refused
    : >"$tmp/audit.jsonl"
    run "$tmp/bin-$b/agentbox" "${args[@]}" || { echo "bench-scripts: $work under $b failed:"; cat "$tmp/err"; exit 1; }
    if grep -q '"decision":"\(deny\|ask_[a-z]*\)"' "$tmp/audit.jsonl"; then
      echo "bench-scripts: $work under $b refused something; the comparison would not be like for like:"
      grep '"decision":"\(deny\|ask_[a-z]*\)"' "$tmp/audit.jsonl" | head -3
      exit 1
    fi
    echo "  $work under $b: $(grep -c '"event":"exec"' "$tmp/audit.jsonl") program starts decided"
  done
  for _ in $(seq 1 "$RUNS"); do
    t run "$tmp/bin-cur/agentbox" "${args[@]}" >>"$tmp/cur.t"
    t run "$tmp/bin-base/agentbox" "${args[@]}" >>"$tmp/base.t"
  done
  c=$(median <"$tmp/cur.t"); b=$(median <"$tmp/base.t")
  printf '%-5s script-heavy (%s): current %d ms, base %s %d ms, ratio %s (goal <= 1.05)\n' \
    "$work" "$what" "$c" "$BASE" "$b" "$(awk -v c="$c" -v b="$b" 'BEGIN{printf "%.3f", c/b}')"
done
