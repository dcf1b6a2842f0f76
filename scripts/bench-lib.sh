# Sourced by the benchmark scripts: what they report to `make bench`'s
# summary of issue 47's goals (scripts/bench.sh prints it at the end).
#
# bench_goal ID FIGURE FLOOR MET appends one row to $BENCH_SUMMARY (when
# set: a script run alone only prints its own table). ID names the goal
# (bench.sh's list: hostcache-first, hostcache-second, base-true, ws-12k,
# ws-100k, ws-end, npm-first, audit-real, exec-loop, make-j2); FIGURE is
# the measured figure with what it was taken against, FLOOR the baseline
# or floor measured in the same run, MET "yes", "no" or "-" (a figure
# without a goal). A later row with the same ID replaces an earlier one.
bench_goal() {
  [ -n "${BENCH_SUMMARY:-}" ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$BENCH_SUMMARY"
}

# bench_met VALUE LIMIT: "yes" when VALUE <= LIMIT, else "no". Give it
# the unrounded value: a figure printed with two decimals (bench_ratio)
# would round 1.004 down to a goal of 1.00 met.
bench_met() { awk -v v="$1" -v l="$2" 'BEGIN { print (v + 0 <= l + 0) ? "yes" : "no" }'; }

# bench_met_ratio A B LIMIT: "yes" when A/B <= LIMIT, judged on the
# unrounded ratio (A <= LIMIT * B), else "no".
bench_met_ratio() { awk -v a="$1" -v b="$2" -v l="$3" 'BEGIN { print (b + 0 > 0 && a + 0 <= (l + 0) * (b + 0)) ? "yes" : "no" }'; }

# bench_ratio A B: A/B with two decimals.
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.2f", a / b }'; }
