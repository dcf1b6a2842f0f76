#!/usr/bin/env bash
# Builds agentbox and runs it on an example workspace: a developer agent
# (here a shell script standing in for the agent) commits inside target/,
# is refused writes to context/, and is denied `git push` by the exec policy.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
ws=$(mktemp -d /tmp/agentbox-demo.XXXXXX)
trap 'rm -rf "$ws" "$ws.checkpoints" "$ws.audit.jsonl" "$ws.audit.jsonl.head" "$ws.audit.jsonl.key"' EXIT
bin/agentbox init "$ws"
echo "requirements: print hello" > "$ws/context/task.md"
git init -q --bare "$ws/target/remote.git"
run() { bin/agentbox run --role developer --workspace "$ws" --approve none --audit "$ws.audit.jsonl" --checkpoint-store "$ws.checkpoints" -- "$@"; }
set +e
echo "--- 1. the agent (a script in target/) works, and the kernel refuses what lies outside"
# A script file: the exec policy cannot read it ahead of time, so this shows
# the kernel layer on its own; each program it starts is still decided.
cat > "$ws/target/agent.sh" <<'SCRIPT'
cat ../context/task.md
git init -q . && git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -qm "first commit"
git log --oneline
echo tamper > ../context/task.md || echo "(Landlock: context/ is read-only)"
cat /etc/shadow || echo "(Landlock: /etc/shadow is not in the allowlist)"
ls "$AGENTBOX_WORKSPACE/.." || echo "(Landlock: nothing above the workspace)"
SCRIPT
run sh ./agent.sh
echo "exit status $?"
echo "--- 2. the exec policy denies git push before it runs"
run git push ./remote.git HEAD:main
echo "exit status $? (126 = denied)"
echo "--- 3. a script containing a denied command is denied as a whole"
run sh -c 'echo building; git -c core.pager=cat push ./remote.git HEAD:main'
echo "exit status $?"
echo "--- 4. nothing asks before deleting: every command is undoable"
run sh -c 'rm agent.sh && echo "rm ran, no ask, no approver needed"; ls -A'
echo "exit status $?"
bin/agentbox changes --checkpoint-store "$ws.checkpoints"
last=$(bin/agentbox changes --checkpoint-store "$ws.checkpoints" --runs | tail -1 | cut -d' ' -f1)
bin/agentbox undo --checkpoint-store "$ws.checkpoints" "$last"
echo "after agentbox undo $last:"; ls -A "$ws/target"
set -e
echo "--- audit (decisions other than allow)"
bin/agentbox audit --file "$ws.audit.jsonl" --decision deny || true
rm -f "$ws.audit.jsonl" "$ws.audit.jsonl.head" "$ws.audit.jsonl.key"
