#!/usr/bin/env bash
# Launch overhead of `agentbox run`: times /bin/true bare, under bubblewrap
# (`bwrap --ro-bind / / /bin/true`) and under `agentbox run` in the same run,
# N times each (default 200, BENCH_N=...; interleaved, so load changes hit
# every row alike), and prints medians, p90 and ratios, plus agentbox's
# peak RSS. BENCH_BASE=/path/to/older/agentbox adds rows for that binary
# (before/after in the same run). Installs bubblewrap with apt-get when it
# is missing (needs root), and builds bin/agentbox.
#
# agentbox is measured three ways, all with the role below (no limits):
#   --no-exec-policy  the kernel boundary only: policy load, Landlock,
#                     seccomp, caps drop, rlimits, env scrub, fd hygiene,
#                     audit log, reaping;
#   default           plus the ptrace exec supervisor deciding /bin/true;
#   --pids 1024       plus a cgroup per run (create, join, kill, remove).
#
# Two floor rows (scripts/gostart, built here) say what the launch goal
# can reach at all: a Go program that only starts /bin/true (one Go runtime
# start: any Go launcher's floor), and a Go program that starts a Go program
# that execs /bin/true (two runtime starts: agentbox's launcher + helper
# structure with nothing set up).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-200}

make -s build
AB=$PWD/bin/agentbox

if ! command -v bwrap >/dev/null 2>&1; then
  echo "installing bubblewrap (apt-get)..." >&2
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }) || true
  else
    (sudo -n apt-get install -y -qq bubblewrap >/dev/null 2>&1) || true
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
W=$tmp/ws
"$AB" init "$W" >/dev/null
# An explicit role so the numbers do not depend on the built-in roles' limits.
cat > "$tmp/bench-role.yaml" <<'EOF'
version: 1
roles:
  bench:
    description: benchmark role (kernel boundary only)
    default: allow
    filesystem: {context: ro, target: rwx, feedback: rw, own_agent: rwx, other_agents: ro}
    network: none
EOF
chmod 600 "$tmp/bench-role.yaml"
AUDIT=$tmp/audit.jsonl
RUN=("$AB" run --quiet --role bench --workspace "$W" --policy "$tmp/bench-role.yaml" --no-user-policy --approve none --audit "$AUDIT" --)

if ! "${RUN[@]}" /bin/true; then
  echo "agentbox run -- /bin/true failed; cannot benchmark" >&2
  exit 1
fi

# The variants are interleaved (one run of each per round, N rounds) so a
# change in machine load affects every row alike; per-run wall times (µs)
# go to $tmp/LABEL.
labels=(); cmds=()
add() { labels+=("$1"); shift; cmds+=("$(printf '%q ' "$@")"); : > "$tmp/${labels[-1]}"; }
add bare /bin/true
have_bwrap=0
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / /bin/true 2>/dev/null; then
  have_bwrap=1
  add bwrap bwrap --ro-bind / / /bin/true
fi
add agentbox "${RUN[@]}" /bin/true
GS=$tmp/gostart
CGO_ENABLED=0 go build -trimpath -o "$GS" ./scripts/gostart
add gofloor "$GS" run /bin/true
add gofloor2 "$GS" run "$GS" exec /bin/true
# The single-runtime prototype (issue 33, docs/decisions.md): one Go
# runtime sets no_new_privs, Landlock and seccomp on one locked thread and
# forks the command from it.
OS=$tmp/onestart-bin
CGO_ENABLED=0 go build -trimpath -o "$OS" ./scripts/onestart
mkdir -p "$tmp/onestart-dir"
add onestart "$OS" "$tmp/onestart-dir" /bin/true
# The built-in developer role (its rules, carve-outs and limits), and the
# same in a workspace of 12,000 files: launch must not grow with it.
DEV=("$AB" run --quiet --role developer --workspace "$W" --no-user-policy --approve none --audit "$AUDIT" --no-limits --)
add developer "${DEV[@]}" /bin/true
BIG=$tmp/big
"$AB" init "$BIG" >/dev/null
python3 - "$BIG/target/proj" <<'PY'
import os, sys
for a in range(20):
    for b in range(20):
        d = os.path.join(sys.argv[1], "src", "m%d" % a, "p%d" % b, "x")
        os.makedirs(d, exist_ok=True)
        for c in range(30):
            open(os.path.join(d, "f%d.txt" % c), "w").write("x")
PY
DEVBIG=("$AB" run --quiet --role developer --workspace "$BIG" --no-user-policy --approve none --audit "$AUDIT" --no-limits --)
add developer_12k "${DEVBIG[@]}" /bin/true
# the same without checkpoints: what the two walks of the 12k files cost
# (a checkpoint at the run's start and at its end)
DEVBIGNC=("${DEVBIG[@]:0:${#DEVBIG[@]}-1}" --checkpoints off --)
add developer_12k_nocp "${DEVBIGNC[@]}" /bin/true
DEVNC=("${DEV[@]:0:${#DEV[@]}-1}" --checkpoints off --)
add developer_nocp "${DEVNC[@]}" /bin/true
# the developer role with its network through the egress proxy (a host
# granted; nothing is contacted: the command is /bin/true)
DEVP=("${DEV[@]:0:${#DEV[@]}-1}" --network proxy --allow-host example.invalid --)
have_proxy=0
if "${DEVP[@]}" /bin/true >/dev/null 2>&1; then
  have_proxy=1
  add developer_proxy "${DEVP[@]}" /bin/true
fi
# a review run (target/ an overlay; root only here): its layer is made,
# mounted and closed at each launch
have_review=0
DEVR=("${DEV[@]:0:${#DEV[@]}-1}" --review --review-store "$tmp/layers" --)
if [ "$(id -u)" = 0 ] && "${DEVR[@]}" /bin/true >/dev/null 2>&1; then
  have_review=1
  add developer_review "${DEVR[@]}" /bin/true
fi
# landrun (the closest Go peer: Landlock only), when the module proxy serves it.
have_landrun=0
LR=$(command -v landrun || true)
if [ -z "$LR" ] && GOBIN=$tmp/lr go install github.com/zouuup/landrun/cmd/landrun@latest >/dev/null 2>&1; then
  LR=$tmp/lr/landrun
fi
if [ -n "$LR" ] && "$LR" --rox /usr,/lib,/lib64,/bin --ro /etc /bin/true 2>/dev/null; then
  have_landrun=1
  add landrun "$LR" --rox /usr,/lib,/lib64,/bin --ro /etc /bin/true
fi
RUNK=("${RUN[@]:0:${#RUN[@]}-1}" --no-exec-policy --)
add agentbox_kernel "${RUNK[@]}" /bin/true
cg=0
RUNC=("${RUN[@]:0:${#RUN[@]}-1}" --pids 1024 --)
if "${RUNC[@]}" /bin/true 2>/dev/null; then
  cg=1
  add agentbox_cgroup "${RUNC[@]}" /bin/true
fi
# BENCH_BASE=/path/to/an/older/agentbox adds its two launch rows (before/after).
if [ -n "${BENCH_BASE:-}" ]; then
  BRUN=("$BENCH_BASE" "${RUN[@]:1}")
  BRUNK=("$BENCH_BASE" "${RUNK[@]:1}")
  add base "${BRUN[@]}" /bin/true
  add base_kernel "${BRUNK[@]}" /bin/true
fi
for ((i = 0; i < N; i++)); do
  for j in "${!labels[@]}"; do
    s=$EPOCHREALTIME
    eval "${cmds[$j]}" >/dev/null 2>&1 || true
    e=$EPOCHREALTIME
    echo "$(( (${e/./} - ${s/./}) ))" >> "$tmp/${labels[$j]}"
  done
done

stats() { # file -> "median p90" in ms
  sort -n "$1" | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; p=a[int(NR*0.9)]; printf "%.3f %.3f\n", m/1000, p/1000}'
}

read -r bare_m bare_p < <(stats "$tmp/bare")
read -r ab_m ab_p < <(stats "$tmp/agentbox")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (other load inflates every row)"
printf '%-34s %10s %10s %10s\n' "launch of /bin/true ($N runs)" "median ms" "p90 ms" "ratio"
printf '%-34s %10s %10s %10s\n' "bare" "$bare_m" "$bare_p" "1.00x"
if [ $have_bwrap = 1 ]; then
  read -r bw_m bw_p < <(stats "$tmp/bwrap")
  printf '%-34s %10s %10s %9.2fx\n' "bwrap --ro-bind / /" "$bw_m" "$bw_p" "$(echo "$bw_m / $bare_m" | bc -l)"
fi
read -r gf_m gf_p < <(stats "$tmp/gofloor")
printf '%-34s %10s %10s %9.2fx\n' "floor: Go program runs /bin/true" "$gf_m" "$gf_p" "$(echo "$gf_m / $bare_m" | bc -l)"
read -r gf2_m gf2_p < <(stats "$tmp/gofloor2")
printf '%-34s %10s %10s %9.2fx\n' "floor: Go -> Go helper -> exec" "$gf2_m" "$gf2_p" "$(echo "$gf2_m / $bare_m" | bc -l)"
read -r os_m os_p < <(stats "$tmp/onestart")
printf '%-34s %10s %10s %9.2fx\n' "prototype: one runtime, thread setup" "$os_m" "$os_p" "$(echo "$os_m / $bare_m" | bc -l)"
read -r abk_m abk_p < <(stats "$tmp/agentbox_kernel")
printf '%-34s %10s %10s %9.2fx\n' "agentbox run --no-exec-policy" "$abk_m" "$abk_p" "$(echo "$abk_m / $bare_m" | bc -l)"
printf '%-34s %10s %10s %9.2fx\n' "agentbox run (exec policy)" "$ab_m" "$ab_p" "$(echo "$ab_m / $bare_m" | bc -l)"
if [ $cg = 1 ]; then
  read -r cg_m cg_p < <(stats "$tmp/agentbox_cgroup")
  printf '%-34s %10s %10s %9.2fx\n' "agentbox run --pids 1024 (cgroup)" "$cg_m" "$cg_p" "$(echo "$cg_m / $bare_m" | bc -l)"
fi
if [ -n "${BENCH_BASE:-}" ]; then
  read -r bs_m bs_p < <(stats "$tmp/base_kernel")
  printf '%-34s %10s %10s %9.2fx\n' "base --no-exec-policy" "$bs_m" "$bs_p" "$(echo "$bs_m / $bare_m" | bc -l)"
  read -r bs_m bs_p < <(stats "$tmp/base")
  printf '%-34s %10s %10s %9.2fx\n' "base (exec policy)" "$bs_m" "$bs_p" "$(echo "$bs_m / $bare_m" | bc -l)"
fi
read -r dv_m dv_p < <(stats "$tmp/developer")
printf '%-34s %10s %10s %9.2fx\n' "agentbox run --role developer" "$dv_m" "$dv_p" "$(echo "$dv_m / $bare_m" | bc -l)"
read -r db_m db_p < <(stats "$tmp/developer_12k")
printf '%-34s %10s %10s %9.2fx\n' "  ... in a 12k-file workspace" "$db_m" "$db_p" "$(echo "$db_m / $bare_m" | bc -l)"
read -r dn_m dn_p < <(stats "$tmp/developer_nocp")
printf '%-34s %10s %10s %9.2fx\n' "  ... --checkpoints off" "$dn_m" "$dn_p" "$(echo "$dn_m / $bare_m" | bc -l)"
if [ $have_proxy = 1 ]; then
  read -r dp_m dp_p < <(stats "$tmp/developer_proxy")
  printf '%-34s %10s %10s %9.2fx\n' "  ... --network proxy" "$dp_m" "$dp_p" "$(echo "$dp_m / $bare_m" | bc -l)"
fi
read -r dbn_m dbn_p < <(stats "$tmp/developer_12k_nocp")
printf '%-34s %10s %10s %9.2fx\n' "  ... 12k files, --checkpoints off" "$dbn_m" "$dbn_p" "$(echo "$dbn_m / $bare_m" | bc -l)"
if [ $have_review = 1 ]; then
  read -r rv_m rv_p < <(stats "$tmp/developer_review")
  printf '%-34s %10s %10s %9.2fx\n' "  ... --review" "$rv_m" "$rv_p" "$(echo "$rv_m / $bare_m" | bc -l)"
  printf 'launch --review / --checkpoints off (medians): %.2fx (goal <= 1.1x); / default: %.2fx\n' \
    "$(echo "$rv_m / $dn_m" | bc -l)" "$(echo "$rv_m / $dv_m" | bc -l)"
fi
printf 'launch goal (issue 33): developer / two-start floor %.2fx (goal <= 1.3x); one-runtime prototype / two-start floor %.2fx\n' \
  "$(echo "$dv_m / $gf2_m" | bc -l)" "$(echo "$os_m / $gf2_m" | bc -l)"
if [ $have_proxy = 1 ]; then
  printf 'launch with --network proxy / without (medians): %.2fx (goal <= 1.2x)\n' "$(echo "$dp_m / $dv_m" | bc -l)"
fi
printf '12k-file workspace / empty workspace (medians): %.2fx with checkpoints (their start and end walks), %.2fx without (goal <= 1.1x)\n' \
  "$(echo "$db_m / $dv_m" | bc -l)" "$(echo "$dbn_m / $dn_m" | bc -l)"
if [ $have_landrun = 1 ]; then
  read -r lr_m lr_p < <(stats "$tmp/landrun")
  printf '%-34s %10s %10s %9.2fx\n' "landrun (Landlock only)" "$lr_m" "$lr_p" "$(echo "$lr_m / $bare_m" | bc -l)"
  printf 'agentbox (developer) / landrun (medians): %.2fx (goal <= 1.0x)\n' "$(echo "$dv_m / $lr_m" | bc -l)"
else
  echo "landrun: not installed and not served by the module proxy here; row skipped"
fi
if [ $have_bwrap = 1 ]; then
  printf 'agentbox (developer) / bwrap (medians): %.2fx (goal <= 1.0x)\n' "$(echo "$dv_m / $bw_m" | bc -l)"
  printf 'agentbox / bwrap (medians): %.2fx kernel boundary only, %.2fx with the exec policy\n' "$(echo "$abk_m / $bw_m" | bc -l)" "$(echo "$ab_m / $bw_m" | bc -l)"
  printf 'floors / bwrap (medians): %.2fx one Go runtime start, %.2fx two (launcher + helper), nothing set up\n' "$(echo "$gf_m / $bw_m" | bc -l)" "$(echo "$gf2_m / $bw_m" | bc -l)"
else
  echo "bwrap: not available (install bubblewrap to compare)"
fi

# Peak RSS of the launcher (and, separately, of the helper before it execs).
if [ -x /usr/bin/time ]; then
  rss=$(/usr/bin/time -f '%M' "${RUN[@]}" /bin/true 2>&1 >/dev/null | tail -1)
  echo "agentbox peak RSS: ${rss} KB (launcher; limit goal < 30 MB)"
fi

# Where the launch time goes: median of each stage's time since the CLI
# started (agentbox run --debug), over 40 runs of the developer role.
for i in $(seq 1 40); do
  "${DEV[@]:0:${#DEV[@]}-1}" --debug -- /bin/true 2>&1 >/dev/null | sed -n 's/^agentbox: *\([0-9.]*\)ms \(.*\)$/\1\t\2/p' |
    awk -F'\t' '{gsub(/[0-9]+|\(|\)/, "", $2); gsub(/  +/, " ", $2); print $1 "\t" $2}'
done | python3 -c '
import sys, statistics
vals, order = {}, []
for line in sys.stdin:
    t, _, stage = line.rstrip("\n").partition("\t")
    if stage not in vals:
        vals[stage] = []
        order.append(stage)
    vals[stage].append(float(t))
print("launch stages (developer role, median ms since the CLI started; the Go runtime start before it is not counted):")
for st in order:
    print("  %8.2f  %s" % (statistics.median(vals[st]), st))
'
