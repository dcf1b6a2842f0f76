#!/usr/bin/env bash
# Exec-supervision benchmark (issue 4): the same work bare and inside
# `agentbox run --role developer` (Landlock + seccomp + cgroups + the exec
# supervisor deciding and auditing every program start).
#
#   1. a shell loop of 2000 fork+exec of /bin/true
#   2. a real multi-process build: `make -j2` of a generated C project
#      (300 .c files: ~900 execs of cc, cc1, as, plus the link)
#   3. `go vet ./...` of a small module, warm (launch-dominated)
#   4. 16 runs in parallel, each a loop of 200 execs, all into one audit
#      file, against 16 bare loops in parallel
#
# Each sandboxed row runs with checkpoints on (the default); the
# "checkpoints: off vs on" rows compare it with --checkpoints off, measured
# in the same rounds.
# Prints the median of RUNS runs (default 5; builds 3) and sandboxed/bare.
# Goals (issue 33): exec loop <= 1.28x, build <= 1.16x, go vet <= 1.1x,
# parallel <= 1.5x. Their floor, the exec mechanism alone (notification,
# seize, exec stop, detach), is BenchmarkSupervisedExecLoop/-Build's
# notify-mechanism row, which `make bench` prints before this script.
#
# Usage: scripts/bench-exec.sh            (needs root, gcc, make)
#        RUNS=9 NFILES=400 scripts/bench-exec.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
BRUNS=${BRUNS:-3}
NEXEC=${NEXEC:-2000}
NFILES=${NFILES:-300}
NPAR=${NPAR:-16}
PEXEC=${PEXEC:-200}

for p in gcc make; do
  command -v "$p" >/dev/null || { echo "bench-exec: $p not installed, skipped"; exit 0; }
done
if [ "$(id -u)" != 0 ]; then echo "bench-exec: needs root (Landlock, cgroups, ptrace), skipped"; exit 0; fi

make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
ws=$tmp/ws
"$AB" init "$ws" >/dev/null

# The loop as a script the role may run (sh with a script asks by default).
cat >"$ws/target/loop.sh" <<EOF
i=0
while [ \$i -lt $NEXEC ]; do /bin/true; i=\$((i+1)); done
EOF
# Policy (outside the workspace): the loop script and the compiler's
# internal programs (cc1, collect2, ...), which the developer role does not
# name, are allowed so nothing waits for an approver.
cat >"$tmp/bench.yaml" <<'EOF'
version: 1
rules:
  - {decision: allow, command: sh loop.sh}
  - {decision: allow, command: cc1}
  - {decision: allow, command: collect2}
  - {decision: allow, command: lto-wrapper}
EOF

# C project: NFILES small translation units and a Makefile.
proj=$ws/target/cproj
mkdir -p "$proj"
{
  for i in $(seq 1 "$NFILES"); do echo "int f$i(int);"; done
  echo '#include <stdio.h>'
  echo 'int main(void){int s=0;'
  for i in $(seq 1 "$NFILES"); do echo "s+=f$i($i);"; done
  echo 'printf("%d\n",s);return 0;}'
} >"$proj/main.c"
for i in $(seq 1 "$NFILES"); do
  printf 'int f%d(int x){int y=x;for(int k=0;k<%d;k++)y=y*31+k;return y;}\n' "$i" "$i" >"$proj/f$i.c"
done
objs=$(for i in $(seq 1 "$NFILES"); do printf 'f%d.o ' "$i"; done)
printf 'prog: main.o %s\n\tcc -o $@ $^\n%%.o: %%.c\n\tcc -O1 -c -o $@ $<\nclean:\n\trm -f *.o prog\n' "$objs" >"$proj/Makefile"

audit=$tmp/audit.jsonl
sandboxed() {
  "$AB" run --quiet --role developer --workspace "$ws" --approve none --no-user-policy \
    --policy "$tmp/bench.yaml" --audit "$audit" -- "$@"
}

# kernel: the same, without the exec supervisor (Landlock, seccomp, cgroups
# only), to split the overhead between the boundary and the supervisor.
kernel() {
  "$AB" run --quiet --role developer --workspace "$ws" --approve none --no-user-policy \
    --policy "$tmp/bench.yaml" --audit "$audit" --no-exec-policy -- "$@"
}

# traced: the exec supervisor in its other mode (--trace-all: every process
# traced, four ptrace stops per fork+exec), the measured alternative.
traced() {
  "$AB" run --quiet --role developer --workspace "$ws" --approve none --no-user-policy \
    --policy "$tmp/bench.yaml" --audit "$audit" --trace-all -- "$@"
}

# nocp: the same as sandboxed with checkpoints off (issue 28: what the
# checkpoint before each command costs, against the same run without).
nocp() {
  "$AB" run --quiet --role developer --workspace "$ws" --approve none --no-user-policy \
    --policy "$tmp/bench.yaml" --audit "$audit" --checkpoints off -- "$@"
}

# review: the same as nocp as a review run (issue 31: target/ an overlay,
# the build's output in the run's layer); each layer is discarded after.
review() {
  "$AB" run --quiet --role developer --workspace "$ws" --approve none --no-user-policy \
    --policy "$tmp/bench.yaml" --audit "$audit" --review --review-store "$tmp/layers" -- "$@"
}
discard_all() {
  local d
  for d in "$tmp/layers"/*; do
    [ -e "$d" ] && "$AB" discard --review-store "$tmp/layers" "$(basename "$d")"
  done
  return 0
}

# now_ms prints a monotonic-ish timestamp in milliseconds.
now_ms() { date +%s%3N; }

# median of the arguments
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

time_it() { # runs "$@", prints elapsed ms
  local t0 t1
  t0=$(now_ms)
  "$@" >/dev/null 2>&1 || { echo "bench-exec: command failed: $*" >&2; "$@" >&2 || true; exit 1; }
  t1=$(now_ms)
  echo $((t1 - t0))
}

bare_loop=(); sb_loop=(); sb_empty=(); k_loop=(); t_loop=(); n_loop=()
for r in $(seq 1 "$RUNS"); do
  bare_loop+=("$(cd "$ws/target" && time_it sh loop.sh)")
  sb_loop+=("$(time_it sandboxed sh loop.sh)")
  n_loop+=("$(time_it nocp sh loop.sh)")
  sb_empty+=("$(time_it sandboxed true)")
  k_loop+=("$(time_it kernel sh loop.sh)")
  t_loop+=("$(time_it traced sh loop.sh)")
done
bare_build=(); sb_build=(); k_build=(); t_build=(); n_build=(); r_build=()
for r in $(seq 1 "$BRUNS"); do
  make -s -C "$proj" clean >/dev/null
  bare_build+=("$(time_it make -s -C "$proj" -j2)")
  make -s -C "$proj" clean >/dev/null
  sb_build+=("$(cd "$ws/target" && time_it sandboxed make -s -C cproj -j2)")
  make -s -C "$proj" clean >/dev/null
  n_build+=("$(cd "$ws/target" && time_it nocp make -s -C cproj -j2)")
  make -s -C "$proj" clean >/dev/null
  k_build+=("$(cd "$ws/target" && time_it kernel make -s -C cproj -j2)")
  make -s -C "$proj" clean >/dev/null
  t_build+=("$(cd "$ws/target" && time_it traced make -s -C cproj -j2)")
  make -s -C "$proj" clean >/dev/null
  if [ "$(id -u)" = 0 ]; then
    r_build+=("$(cd "$ws/target" && time_it review make -s -C cproj -j2)")
    discard_all
  fi
done
# go vet ./... of a small module, warm (caches filled by a first run).
have_go=0
if command -v go >/dev/null; then
  have_go=1
  gv=$ws/target/gvet
  mkdir -p "$gv/a" "$gv/b"
  printf 'module example.com/gvet\n\ngo 1.21\n' >"$gv/go.mod"
  printf 'package a\n\nimport "fmt"\n\nfunc A() string { return fmt.Sprint(1) }\n' >"$gv/a/a.go"
  printf 'package b\n\nimport "example.com/gvet/a"\n\nfunc B() string { return a.A() }\n' >"$gv/b/b.go"
  (cd "$gv" && go vet ./... >/dev/null 2>&1) || true
  (cd "$gv" && sandboxed go vet ./... >/dev/null 2>&1) || true
  bare_vet=(); sb_vet=()
  for r in $(seq 1 "$RUNS"); do
    bare_vet+=("$(cd "$gv" && time_it go vet ./...)")
    sb_vet+=("$(cd "$gv" && time_it sandboxed go vet ./...)")
  done
fi
# NPAR runs at once, each PEXEC execs, one shared audit file.
printf 'i=0\nwhile [ $i -lt %d ]; do /bin/true; i=$((i+1)); done\n' "$PEXEC" >"$ws/target/ploop.sh"
printf '  - {decision: allow, command: sh ploop.sh}\n' >>"$tmp/bench.yaml"
par() { # "$@" NPAR times in parallel
  local pids=() i
  for i in $(seq 1 "$NPAR"); do "$@" >/dev/null 2>&1 & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
}
bare_par=(); sb_par=()
for r in $(seq 1 "$RUNS"); do
  bare_par+=("$(cd "$ws/target" && time_it par sh ploop.sh)")
  sb_par+=("$(cd "$ws/target" && time_it par sandboxed sh ploop.sh)")
done
execs=$(grep -c '"event":"exec"' "$audit" || true)

bl=$(median "${bare_loop[@]}"); sl=$(median "${sb_loop[@]}"); se=$(median "${sb_empty[@]}")
bb=$(median "${bare_build[@]}"); sbb=$(median "${sb_build[@]}")
kl=$(median "${k_loop[@]}"); kb=$(median "${k_build[@]}")
tl=$(median "${t_loop[@]}"); tb=$(median "${t_build[@]}")
nl=$(median "${n_loop[@]}"); nb=$(median "${n_build[@]}")
printf '%-34s %10s %12s %8s %8s\n' "benchmark (median ms)" "bare" "agentbox" "ratio" "goal"
printf '%-34s %10d %12d %8s %8s\n' "exec loop ($NEXEC x fork+exec true)" "$bl" "$sl" "$(awk -v a="$sl" -v b="$bl" 'BEGIN{printf "%.2fx", a/b}')" "1.28x"
printf '%-34s %10s %12d %8s %8s\n' "  (agentbox run -- true: startup)" "-" "$se" "" ""
printf '%-34s %10d %12d %8s %8s\n' "  exec loop minus startup" "$bl" "$((sl - se))" "$(awk -v a="$((sl - se))" -v b="$bl" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-34s %10d %12d %8s %8s\n' "  --no-exec-policy (boundary only)" "$bl" "$kl" "$(awk -v a="$kl" -v b="$bl" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-34s %10d %12d %8s %8s\n' "  --trace-all (every process traced)" "$bl" "$tl" "$(awk -v a="$tl" -v b="$bl" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-34s %10d %12d %8s %8s\n' "  checkpoints: off vs on (default)" "$nl" "$sl" "$(awk -v a="$sl" -v b="$nl" 'BEGIN{printf "%.2fx", a/b}')" "1.05x"
printf '%-34s %10d %12d %8s %8s\n' "make -j2 ($NFILES C files)" "$bb" "$sbb" "$(awk -v a="$sbb" -v b="$bb" 'BEGIN{printf "%.2fx", a/b}')" "1.16x"
printf '%-34s %10d %12d %8s %8s\n' "  --no-exec-policy (boundary only)" "$bb" "$kb" "$(awk -v a="$kb" -v b="$bb" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-34s %10d %12d %8s %8s\n' "  --trace-all (every process traced)" "$bb" "$tb" "$(awk -v a="$tb" -v b="$bb" 'BEGIN{printf "%.2fx", a/b}')" ""
printf '%-34s %10d %12d %8s %8s\n' "  checkpoints: off vs on (default)" "$nb" "$sbb" "$(awk -v a="$sbb" -v b="$nb" 'BEGIN{printf "%.2fx", a/b}')" "1.05x"
if [ ${#r_build[@]} -gt 0 ]; then
  rb=$(median "${r_build[@]}")
  printf '%-34s %10d %12d %8s %8s\n' "  --review vs --checkpoints off" "$nb" "$rb" "$(awk -v a="$rb" -v b="$nb" 'BEGIN{printf "%.2fx", a/b}')" "1.05x"
fi
if [ $have_go = 1 ]; then
  bv=$(median "${bare_vet[@]}"); sv=$(median "${sb_vet[@]}")
  printf '%-34s %10d %12d %8s %8s\n' "go vet ./... (warm)" "$bv" "$sv" "$(awk -v a="$sv" -v b="$bv" 'BEGIN{printf "%.2fx", a/b}')" "1.10x"
fi
bp=$(median "${bare_par[@]}"); sp=$(median "${sb_par[@]}")
printf '%-34s %10d %12d %8s %8s\n' "$NPAR runs x $PEXEC execs, one audit" "$bp" "$sp" "$(awk -v a="$sp" -v b="$bp" 'BEGIN{printf "%.2fx", a/b}')" "1.50x"
echo "per exec: bare $(awk -v a="$bl" -v n="$NEXEC" 'BEGIN{printf "%.0f", a*1000/n}') us, sandboxed $(awk -v a="$((sl - se))" -v n="$NEXEC" 'BEGIN{printf "%.0f", a*1000/n}') us (startup excluded); load average $(cut -d' ' -f1-3 /proc/loadavg); $execs exec decisions audited"
echo "runs: loop bare ${bare_loop[*]} | sandboxed ${sb_loop[*]} | boundary only ${k_loop[*]} | trace-all ${t_loop[*]} | startup ${sb_empty[*]}; build bare ${bare_build[*]} | sandboxed ${sb_build[*]} | boundary only ${k_build[*]} | trace-all ${t_build[*]}"
