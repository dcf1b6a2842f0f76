#!/usr/bin/env bash
# Host caches copy-on-write, npm (issue 47): a small generated npm project
# with real dependencies from the npm registry (lodash, semver, chalk and
# its four, ms), its `npm ci --offline` then `npm test` (node:test, in one process) on
# the first run in a fresh workspace and a fresh --agent, the packages
# coming from the host's npm cache through the run's layer, against the
# same bare on the host with that cache. The cache is the benchmark's own:
# one `npm install` from the registry into a temporary HOME's ~/.npm, the
# only step that uses the network; the measured runs are offline (npm ci
# --offline fails on a package the cache lacks). Interleaved: each round
# copies the project afresh and runs bare, then the sandbox's first run,
# BENCH_NPM_N rounds (default 3, 1 with BENCH_QUICK=1), medians and the
# ratio. The issue sets no number for npm: the figure is printed as such.
# Checkpoints are off (bench-workspace.sh measures them). Skips, saying
# why, without npm or node, or when the registry cannot be reached for
# the one install; every step is bounded by timeout(1).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
N=${BENCH_NPM_N:-$([ "${BENCH_QUICK:-0}" = 1 ] && echo 1 || echo 3)}
skip() {
  echo "bench-npm: skipped: $*"
  bench_goal npm-first "skipped: $*" "-" "-"
  exit 0
}
command -v npm >/dev/null || skip "npm is not installed"
command -v node >/dev/null || skip "node is not installed"
make -s build
AB=$PWD/bin/agentbox
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state
# the host's npm cache: the benchmark's own HOME's
export HOME=$tmp/home npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
unset npm_config_cache NPM_CONFIG_CACHE
mkdir -p "$HOME" "$tmp/proj/test"
cat >"$tmp/proj/package.json" <<'EOF'
{
  "name": "agentbox-bench-npm",
  "version": "1.0.0",
  "private": true,
  "scripts": { "test": "node test/deps.test.js" },
  "dependencies": {
    "chalk": "4.1.2",
    "lodash": "4.17.21",
    "ms": "2.1.3",
    "semver": "7.6.3"
  }
}
EOF
cat >"$tmp/proj/test/deps.test.js" <<'EOF'
const test = require('node:test');
const assert = require('node:assert');
const _ = require('lodash');
const semver = require('semver');
const chalk = require('chalk');
const ms = require('ms');

test('lodash', () => {
  assert.deepStrictEqual(_.chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.strictEqual(_.sortBy(['b', 'c', 'a'])[0], 'a');
});
test('semver', () => {
  assert.ok(semver.satisfies('1.2.3', '^1.0.0'));
  assert.strictEqual(semver.inc('1.2.3', 'minor'), '1.3.0');
});
test('chalk', () => {
  assert.ok(new chalk.Instance({ level: 1 }).red('x').includes('x'));
});
test('ms', () => {
  assert.strictEqual(ms('2 days'), 172800000);
});
EOF
# The one install from the registry: fills ~/.npm and writes the lock
# file npm ci needs.
(cd "$tmp/proj" && timeout 600 npm install --no-audit --no-fund --loglevel=error >"$tmp/install.log" 2>&1) ||
  { tail -5 "$tmp/install.log" >&2; skip "npm install from the registry failed (see above)"; }
rm -rf "$tmp/proj/node_modules"
[ -d "$HOME/.npm/_cacache" ] || skip "npm install left no cache in \$HOME/.npm/_cacache"
CMD='npm ci --offline --no-audit --no-fund --loglevel=error && npm test --silent'
ms() { # ms CMD...: wall ms of CMD, which must succeed
  local s e
  s=$(date +%s%N)
  timeout 300 "$@" >"$tmp/out" 2>&1 || { tail -20 "$tmp/out" >&2; echo "bench-npm: $* failed" >&2; exit 1; }
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}
for k in bare first; do : >"$tmp/t_$k"; done
for i in $(seq "$N"); do
  cp -a "$tmp/proj" "$tmp/bare$i"
  (cd "$tmp/bare$i" && ms sh -c "$CMD") >>"$tmp/t_bare"
  "$AB" init "$tmp/ws$i" >/dev/null
  cp -a "$tmp/proj" "$tmp/ws$i/target/proj"
  (cd "$tmp/ws$i/target/proj" && ms "$AB" run --quiet --role developer --no-limits --no-user-policy --approve none \
    --checkpoints off --audit "$tmp/audit.jsonl" --workspace "$tmp/ws$i" --agent "npm$i" -- sh -c "$CMD") >>"$tmp/t_first"
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
b=$(med "$tmp/t_bare")
f=$(med "$tmp/t_first")
printf 'load average: %s; %s rounds; npm %s, node %s; npm ci --offline && npm test (lodash, semver, chalk, ms)\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$N" "$(npm --version)" "$(node --version)"
printf 'rounds (ms): bare %s; first run %s\n' "$(paste -sd' ' "$tmp/t_bare")" "$(paste -sd' ' "$tmp/t_first")"
r=$(bench_ratio "$f" "$b")
printf '%-52s %7d ms vs %7d ms  %sx  (no goal set: a figure)\n' "first run, fresh workspace and agent, vs bare warm" "$f" "$b" "$r"
bench_goal npm-first "${r}x ($f vs $b ms, $N rounds)" "bare npm ci --offline && npm test, host cache" "-"
