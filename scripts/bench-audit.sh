#!/usr/bin/env bash
# Audit at scale: `agentbox audit verify` of a log of N events (default
# 1,000,000, about 420 MB; BENCH_EVENTS=...) against sha256sum of the same
# file (reading and hashing every byte is the floor), and `agentbox audit
# report` (one pass: report and verification) against verify. Runs are
# interleaved (RUNS rounds, default 3); medians, ratios and peak RSS.
# Then a keyed log as runs write it (BENCH_KEYED_EVENTS, default 300,000
# events of ~1 KB: launch, exec and exit events, each line with its MAC),
# verified on all CPUs and on one (GOMAXPROCS=1).
# Goals: verify <= 1.0x sha256sum, report <= 1.2x verify, memory flat.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${BENCH_EVENTS:-1000000}
RUNS=${RUNS:-3}
K=${BENCH_KEYED_EVENTS:-300000}
make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ms() { # runs "$@" and prints elapsed ms, peak RSS KB and CPU ms (user+system)
  /usr/bin/time -o "$tmp/time" -f '%e %M %U %S' "$@" >/dev/null 2>&1 || true
  awk '{printf "%d %d %d\n", $1*1000, $2, ($3+$4)*1000}' "$tmp/time"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
if [ "${BENCH_AUDIT_REAL_ONLY:-0}" != 1 ]; then # make bench-goals: only the real events
log=$tmp/audit.jsonl
echo "writing a log of $N events..." >&2
"$AB" audit synth --file "$log" --events "$N"
size=$(stat -c %s "$log")
cat "$log" >/dev/null # page cache warm for every row alike

sha=(); ver=(); rep=(); verm=(); repm=()
for r in $(seq 1 "$RUNS"); do
  read -r t _ < <(ms sha256sum "$log"); sha+=("$t")
  read -r t m _ < <(ms "$AB" audit verify --file "$log"); ver+=("$t"); verm+=("$m")
  read -r t m _ < <(ms "$AB" audit report --file "$log"); rep+=("$t"); repm+=("$m")
done
s=$(median "${sha[@]}"); v=$(median "${ver[@]}"); p=$(median "${rep[@]}")
printf '%-40s %10s %10s %8s %8s\n' "audit log of $N events ($((size >> 20)) MB)" "median ms" "peak RSS" "ratio" "goal"
printf '%-40s %10d %10s %8s %8s\n' "sha256sum (baseline)" "$s" "-" "1.00x" ""
printf '%-40s %10d %9dK %8s %8s\n' "agentbox audit verify" "$v" "$(median "${verm[@]}")" "$(awk -v a="$v" -v b="$s" 'BEGIN{printf "%.2fx", a/b}')" "1.00x"
printf '%-40s %10d %9dK %8s %8s\n' "agentbox audit report (vs verify)" "$p" "$(median "${repm[@]}")" "$(awk -v a="$p" -v b="$v" 'BEGIN{printf "%.2fx", a/b}')" "1.20x"
echo "runs: sha256sum ${sha[*]} | verify ${ver[*]} | report ${rep[*]}"

klog=$tmp/keyed.jsonl
echo "writing a keyed log of $K events of ~1 KB..." >&2
"$AB" audit synth --file "$klog" --events "$K" --line-bytes 1000 --keyed
ksize=$(stat -c %s "$klog")
cat "$klog" >/dev/null
ksha=(); kver=(); kone=(); krep=(); kverm=()
for r in $(seq 1 "$RUNS"); do
  read -r t _ < <(ms sha256sum "$klog"); ksha+=("$t")
  read -r t m _ < <(ms "$AB" audit verify --file "$klog"); kver+=("$t"); kverm+=("$m")
  read -r t _ < <(ms env GOMAXPROCS=1 "$AB" audit verify --file "$klog"); kone+=("$t")
  read -r t _ < <(ms "$AB" audit report --file "$klog"); krep+=("$t")
done
s=$(median "${ksha[@]}"); v=$(median "${kver[@]}"); o=$(median "${kone[@]}"); p=$(median "${krep[@]}")
printf '%-40s %10s %10s %8s %8s\n' "keyed log of $K events ($((ksize >> 20)) MB)" "median ms" "peak RSS" "ratio" "goal"
printf '%-40s %10d %10s %8s %8s\n' "sha256sum (baseline)" "$s" "-" "1.00x" ""
printf '%-40s %10d %9dK %8s %8s\n' "agentbox audit verify (MACs checked)" "$v" "$(median "${kverm[@]}")" "$(awk -v a="$v" -v b="$s" 'BEGIN{printf "%.2fx", a/b}')" "1.00x"
printf '%-40s %10d %10s %8s %8s\n' "  the same on one CPU (GOMAXPROCS=1)" "$o" "-" "$(awk -v a="$o" -v b="$s" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-40s %10d %10s %8s %8s\n' "agentbox audit report (vs verify)" "$p" "-" "$(awk -v a="$p" -v b="$v" 'BEGIN{printf "%.2fx", a/b}')" "1.20x"
echo "runs: sha256sum ${ksha[*]} | verify ${kver[*]} | one CPU ${kone[*]} | report ${krep[*]}"
fi

# The keyed log README's figure is about, from real events (issue 47): a
# real run's events (a developer-role run of a shell loop: its launch,
# every exec with its decision, reason and checkpoint, its exit), written
# again by the project's own writer (scripts/auditreplay: audit.OpenKeyed,
# WriteBatch) until BENCH_KEYED_EVENTS events, then verified against
# sha256sum, interleaved (BENCH_REAL_RUNS rounds, default 7): wall time
# (the goal, <= 1.0x) and CPU time (user+system; verify runs on every
# CPU, sha256sum on one).
W=$tmp/ws
"$AB" init "$W" >/dev/null
real=$tmp/real.jsonl
"$AB" run --quiet --role developer --workspace "$W" --no-user-policy --approve none --no-limits --audit "$real" -- \
  /bin/sh -c 'for i in $(seq 100); do ls / >/dev/null; git --version >/dev/null; cat /etc/hostname >/dev/null; done' 2>/dev/null || true
RP=$tmp/auditreplay
CGO_ENABLED=0 go build -trimpath -o "$RP" ./scripts/auditreplay
rlog=$tmp/real-keyed.jsonl
echo "writing a keyed log of $K real events (from $(wc -l < "$real") events of one run)..." >&2
"$RP" "$real" "$rlog" "$K"
rsize=$(stat -c %s "$rlog")
cat "$rlog" >/dev/null
# more rounds than above (the goal's row; ~3 s a round)
RRUNS=${BENCH_REAL_RUNS:-7}
rsha=(); rver=(); rverm=(); rshac=(); rverc=()
for r in $(seq 1 "$RRUNS"); do
  read -r t _ c < <(ms sha256sum "$rlog"); rsha+=("$t"); rshac+=("$c")
  read -r t m c < <(ms "$AB" audit verify --file "$rlog"); rver+=("$t"); rverm+=("$m"); rverc+=("$c")
done
s=$(median "${rsha[@]}"); v=$(median "${rver[@]}"); sc=$(median "${rshac[@]}"); vc=$(median "${rverc[@]}")
printf '%-40s %10s %10s %8s %8s\n' "keyed log of $K real events ($((rsize >> 20)) MB, $((rsize / K)) B/line)" "median ms" "peak RSS" "ratio" "goal"
printf '%-40s %10d %10s %8s %8s\n' "sha256sum (baseline)" "$s" "-" "1.00x" ""
printf '%-40s %10d %9dK %8s %8s\n' "agentbox audit verify (MACs checked)" "$v" "$(median "${rverm[@]}")" "$(awk -v a="$v" -v b="$s" 'BEGIN{printf "%.2fx", a/b}')" "1.00x"
printf '%-40s %10d %10s %8s %8s\n' "  CPU (user+system): sha256sum" "$sc" "-" "1.00x" ""
printf '%-40s %10d %10s %8s %8s\n' "  CPU (user+system): verify" "$vc" "-" "$(bench_ratio "$vc" "$sc")x" ""
echo "runs: sha256sum ${rsha[*]} | verify ${rver[*]} | CPU ms: sha256sum ${rshac[*]} | verify ${rverc[*]}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
r=$(bench_ratio "$v" "$s")
bench_goal audit-real "${r}x wall ($v vs $s ms), CPU $(bench_ratio "$vc" "$sc")x ($vc vs $sc ms); $RRUNS rounds, $((rsize >> 20)) MB" "sha256sum of the same file, interleaved" "$(bench_met_ratio "$v" "$s" 1.0)"
