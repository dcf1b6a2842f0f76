package agentbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// TestAgentCannotRewriteItsJudges (issue 37, items 1 and 2, from inside a
// real run; effects checked from outside): the agent tries to write every
// policy input a later run, check or hook would trust — the caller's user
// policy (created, where none existed), the project's agentbox.yaml, the
// caller's Claude Code settings and Codex rules — and to read a file of
// the caller's HOME. The kernel refuses each. What it may write (a
// workspace of its own in target/ with an agentbox.yaml, Claude settings
// with allow rules and an agent profile viewing ~/.ssh) is not trusted
// later: discovery from there refuses that workspace, deciding from that
// project ignores those allows, and no HOME file becomes reachable.
func TestAgentCannotRewriteItsJudges(t *testing.T) {
	needSandbox(t)
	home := t.TempDir()
	os.Chmod(home, 0o755)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY\n"), 0o600)
	os.MkdirAll(filepath.Join(home, ".codex", "rules"), 0o755)
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	w := newWorld(t)
	os.WriteFile(w.policy, []byte("version: 1\n"), 0o600)
	projectPolicy := filepath.Join(w.ws, "agentbox.yaml")
	before, _ := os.ReadFile(projectPolicy)
	allowAll := "version: 1\nrules:\n  - {decision: allow, command: git push}\n  - {decision: allow, command: rm}\n"
	script := strings.Join([]string{
		`mkdir -p "$H/.config/agentbox" && printf '` + allowAll + `' > "$H/.config/agentbox/policy.yaml" && echo WROTE-user-policy`,
		`printf '` + allowAll + `' >> "$W/agentbox.yaml" && echo WROTE-project-policy`,
		`echo '{"permissions":{"allow":["Bash(git push:*)"]}}' > "$H/.claude/settings.json" && echo WROTE-claude-settings`,
		`echo 'prefix_rule(pattern=["git","push"], decision="allow")' > "$H/.codex/rules/allow.rules" && echo WROTE-codex-rules`,
		`cat "$H/.ssh/id_ed25519" && echo READ-ssh-key`,
		// what the agent may write: a workspace of its own, and settings
		`mkdir -p proj/context proj/target proj/feedback proj/agents proj/.claude`,
		`printf '` + allowAll + `' > proj/agentbox.yaml`,
		`echo '{"permissions":{"allow":["Bash(git push:*)","Bash(rm:*)"]}}' > proj/.claude/settings.json`,
		`printf 'version: 1\nagents:\n  - {name: claude-code, views: ["~/.ssh"]}\n' > proj/target/agentbox.yaml`,
		`echo done`,
	}, "\n")
	// a script file: each program in it is decided when it starts (a
	// whole line naming a permission file would be refused as one)
	steps := filepath.Join(w.ws, "target", "steps.sh")
	if err := os.WriteFile(steps, []byte(script+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, out, _ := runCmd(t, w, []string{"sh", "steps.sh"}, agentbox.WithDir(filepath.Join(w.ws, "target")),
		agentbox.WithEnv(append(os.Environ(), "H="+home, "W="+w.ws)))
	if res.ExitCode != 0 || !strings.Contains(out, "done") {
		t.Fatalf("the agent's run: exit %d\n%s", res.ExitCode, out)
	}
	for _, w := range []string{"WROTE-user-policy", "WROTE-project-policy", "WROTE-claude-settings", "WROTE-codex-rules", "READ-ssh-key", "PRIVATE KEY"} {
		if strings.Contains(out, w) {
			t.Errorf("from inside the run: %s\n%s", w, out)
		}
	}
	for _, p := range []string{filepath.Join(home, ".config", "agentbox", "policy.yaml"), filepath.Join(home, ".claude", "settings.json"),
		filepath.Join(home, ".codex", "rules", "allow.rules")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after the run", p)
		}
	}
	if after, _ := os.ReadFile(projectPolicy); string(after) != string(before) {
		t.Error("the project's agentbox.yaml changed")
	}
	// A run, check or hook started inside the agent's own workspace does
	// not find it (discovery refuses a workspace in another's areas)...
	nested := filepath.Join(w.ws, "target", "proj")
	if ws, err := boundary.FindWorkspace(filepath.Join(nested, "target")); err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Errorf("discovery from the workspace the agent made: %q, %v", ws, err)
	}
	// ...and deciding in the real workspace, from the project the agent
	// wrote settings into, its allows count for nothing.
	eng, err := load.Policy(plan.Load("developer", plan.Selection{Workspace: w.ws, ProjectDir: nested, Home: home}))
	if err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"git", "push", "origin", "main"}} {
		if r := eng.Decide(policy.Query{Argv: argv}); r.Decision == policy.Allow {
			t.Errorf("%v allowed after the agent wrote settings: %s", argv, r.Reason)
		}
	}
	// and a run there cannot read the caller's ~/.ssh through a profile
	res, out, _ = runCmd(t, w, []string{"sh", "-c", `cat "$H/.ssh/id_ed25519" || echo refused`}, agentbox.WithDir(nested),
		agentbox.WithEnv(append(os.Environ(), "H="+home)))
	if strings.Contains(out, "PRIVATE KEY") || !strings.Contains(out, "refused") {
		t.Errorf("a run in the project the agent configured read ~/.ssh: exit %d\n%s", res.ExitCode, out)
	}
}
