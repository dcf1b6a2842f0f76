#!/usr/bin/env bash
# Builds agentbox and runs it on an example workspace: a developer agent
# (here a shell script standing in for the agent) commits inside target/,
# is refused writes to context/, and is denied `git push` by the exec policy.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
ws=$(mktemp -d /tmp/agentbox-demo.XXXXXX)
trap 'rm -rf "$ws"' EXIT
bin/agentbox init "$ws"
echo "requirements: print hello" > "$ws/context/task.md"
git init -q --bare "$ws/target/remote.git"
set +e
bin/agentbox run --role developer --workspace "$ws" --approve none --audit "$ws.audit.jsonl" -- sh -c '
  set -x
  cat ../context/task.md
  echo "tamper" > ../context/task.md            # kernel: read-only area
  git init -q . && git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -qm "first commit"
  git log --oneline
  git push ./remote.git HEAD:main               # exec policy: denied
  exit 0
'
status=$?
set -e
echo "agentbox run exited with $status"
echo "--- audit (decisions other than allow)"
bin/agentbox audit --file "$ws.audit.jsonl" --decision deny || true
rm -f "$ws.audit.jsonl" "$ws.audit.jsonl.head"
