package replay_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/replay"
	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/judge"
	"github.com/agentbox/agentbox/internal/plan"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// TestReplay: a log of a developer run re-decided with a stricter and a
// looser policy reports exactly the events whose decision changes, with
// the inputs the live decision had (identity, executable, environment).
func TestReplay(t *testing.T) {
	d, ws, log, w := replayWorld(t)
	tgt := filepath.Join(ws, "target")
	for _, e := range []audit.Event{
		{Event: audit.EventLaunch, Run: "r1", Role: "developer", Detail: map[string]string{"workspace": ws}},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:ls -la", Argv: []string{"ls", "-la"}, Cwd: tgt, Exe: "/usr/bin/ls", Decision: "allow"},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:curl https://x", Argv: []string{"curl", "https://x"}, Cwd: tgt, Exe: "/usr/bin/curl", Decision: "ask_unavailable"},
		{Event: audit.EventGit, Run: "r1", Role: "developer", Action: "tool:git:push origin main", Argv: []string{"/usr/bin/git", "push", "origin", "main"}, Cwd: tgt, Exe: "/usr/bin/git", Decision: "deny"},
		// a renamed copy of git, identified by content: replayed as git
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:git status", Argv: []string{"./tool", "status"}, Cwd: tgt, Exe: tgt + "/tool", Decision: "allow", Detail: map[string]string{"program": "git"}},
		// a program the developer built, decided by where it lives
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:app", Argv: []string{"./build/app"}, Cwd: tgt, Exe: tgt + "/build/app", Decision: "allow"},
		// git started with LD_PRELOAD from target/: refused by the environment rule then and now
		{Event: audit.EventGit, Run: "r1", Role: "developer", Action: "tool:git:status", Argv: []string{"git", "status"}, Cwd: tgt, Exe: "/usr/bin/git", Decision: "deny", Detail: map[string]string{"env": "LD_PRELOAD=" + tgt + "/x.so"}},
		{Event: audit.EventExit, Run: "r1"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	n := 0
	policy := func(body string) string {
		n++
		p := filepath.Join(d, "p"+string(rune('0'+n))+".yaml")
		os.WriteFile(p, []byte("version: 1\nrules:\n"+body), 0o600)
		return p
	}
	for _, tc := range []struct {
		name   string
		file   string
		want   []string // "seq was->now"
		counts map[string]int
	}{
		{"same policy", "", nil, map[string]int{}},
		{"stricter", policy("  - {decision: deny, command: ls}\n  - {decision: ask, program: \"target/**\"}\n"),
			[]string{"2 allow->deny", "6 allow->ask"}, map[string]int{"allow->deny": 1, "allow->ask": 1}},
		{"looser", policy("  - {decision: allow, glob: \"curl https://*\"}\n"),
			[]string{"3 ask->allow"}, map[string]int{"ask->allow": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := os.Open(log)
			defer f.Close()
			var files []string
			if tc.file != "" {
				files = []string{tc.file}
			}
			rep, err := replay.Replay(f, replay.Options{Policies: files})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rep.Changed {
				got = append(got, strings.Join([]string{itoa(c.Seq), c.Was + "->" + c.Now}, " "))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") || rep.Decided != 6 {
				t.Errorf("changes %q (decided %d); want %q of 6", got, rep.Decided, tc.want)
			}
			for k, v := range tc.counts {
				if rep.Counts[k] != v {
					t.Errorf("counts %v; want %v", rep.Counts, tc.counts)
				}
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestReplayRoleNotInPolicy: events of a role that came from a policy file
// the replay was not given (run --policy roles.yaml --role builder) are
// skipped and counted with a reason naming the role; the other events are
// still re-decided.
func TestReplayRoleNotInPolicy(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Event{
		{Event: audit.EventExec, Run: "r1", Role: "builder", Action: "tool:exec:ls", Argv: []string{"ls"}, Decision: "allow"},
		{Event: audit.EventExec, Run: "r1", Role: "builder", Action: "tool:exec:cat x", Argv: []string{"cat", "x"}, Decision: "allow"},
		{Event: audit.EventExec, Run: "r2", Role: "developer", Action: "tool:exec:ls", Argv: []string{"ls"}, Decision: "allow"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, _ := os.Open(log)
	defer f.Close()
	rep, err := replay.Replay(f, replay.Options{})
	if err != nil {
		t.Fatalf("replay failed on a role it does not know: %v", err)
	}
	if rep.Skipped != 2 || rep.Decided != 1 || !strings.Contains(rep.SkipReason, `role "builder"`) {
		t.Errorf("report %+v; want 2 skipped naming builder, 1 decided", rep)
	}
}

// TestReplayCheckpointedRun: a run that took checkpoints (its launch
// event names the store) was allowed its undoable deletions; replayed
// under the same policy they are allowed again, while the same rm in a
// run without checkpoints was, and is, an ask.
func TestReplayCheckpointedRun(t *testing.T) {
	d, ws, log, w := replayWorld(t)
	tgt := filepath.Join(ws, "target")
	rm := func(run, decision string) audit.Event {
		return audit.Event{Event: audit.EventExec, Run: run, Role: "developer", Action: "tool:exec:rm " + tgt + "/x", Argv: []string{"rm", tgt + "/x"}, Cwd: tgt, Exe: "/usr/bin/rm", Decision: decision}
	}
	for _, e := range []audit.Event{
		{Event: audit.EventLaunch, Run: "cp", Role: "developer", Detail: map[string]string{"workspace": ws, "checkpoints": filepath.Join(d, "store")}},
		rm("cp", "allow"),
		{Event: audit.EventLaunch, Run: "nocp", Role: "developer", Detail: map[string]string{"workspace": ws}},
		rm("nocp", "ask_unavailable"),
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := replay.Replay(f, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decided != 2 || len(rep.Changed) != 0 {
		t.Errorf("replay: decided %d, changed %+v; want 2 and none", rep.Decided, rep.Changed)
	}
}

// replayWorld is a workspace in a temporary directory and an audit log
// open for writing beside it.
func replayWorld(t *testing.T) (dir, ws, log string, w *audit.Writer) {
	t.Helper()
	dir = t.TempDir()
	ws = filepath.Join(dir, "ws")
	if _, err := boundary.Init(ws); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "audit.jsonl")
	w, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ws, log, w
}

// TestReplayHookOutsideWorkspace: the hook refuses a file tool's path
// outside the workspace (absolute, through a symlink, with '..') before
// any policy; a log of such real hook decisions replays with the same
// verdicts, whether the workspace comes from --workspace or, as the hook
// finds it, from the call's cwd — not as "deny -> ask" changes. A path
// inside is still decided by the policy replayed.
func TestReplayHookOutsideWorkspace(t *testing.T) {
	if judge.WorkspacePathRule != "hook/workspace-path" {
		t.Fatalf("judge.WorkspacePathRule is %q; replay's copy says hook/workspace-path", judge.WorkspacePathRule)
	}
	d, ws, log, w := replayWorld(t)
	tgt := filepath.Join(ws, "target")
	outside := filepath.Join(d, "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tgt, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tgt, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := boundary.NewRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	// The hook's own decisions (cmd/agentbox hook claude-code): the same
	// engine and judge.DecideTool, the event written as the hook writes it.
	eng, err := load.Policy(plan.Load("developer", plan.Selection{Workspace: ws, NoUserFile: true, NoDiscover: true}))
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		tool, key, path string
		refused         bool
	}{
		{"Read", "file_path", "/etc/hostname", true},
		{"Read", "file_path", filepath.Join(tgt, "out", "secret"), true},
		{"Write", "file_path", "../../outside/new", true},
		{"Edit", "file_path", "out/secret", true},
		{"Read", "file_path", filepath.Join(tgt, "main.go"), false},
	}
	for _, c := range calls {
		in, _ := json.Marshal(map[string]string{c.key: c.path})
		action, res, err := judge.DecideTool(eng, root, judge.ToolCall{Name: c.tool, Input: in, Cwd: tgt})
		if err != nil {
			t.Fatal(err)
		}
		if refused := res.Rule != nil && res.Rule.ID == judge.WorkspacePathRule; refused != c.refused || (refused && res.Decision != policy.Deny) {
			t.Fatalf("hook on %s %s: %s by %+v; want refused=%v", c.tool, c.path, res.Decision, res.Rule, c.refused)
		}
		e := audit.Event{Event: audit.EventTool, Agent: "claude-code", Role: "developer", Run: "session-1", Cwd: tgt,
			Action: action, Decision: res.Decision.String(), Reason: res.Reason,
			Detail: map[string]string{"hook": "claude-code", "tool": c.tool}}
		if res.Rule != nil {
			e.Rule, e.Layer = res.Rule.ID, res.Rule.Layer.String()
		}
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	stricter := filepath.Join(d, "stricter.yaml")
	if err := os.WriteFile(stricter, []byte("version: 1\nrules:\n  - {decision: deny, tool: view, path: \"target/*.go\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    replay.Options
		want []string // "seq was->now"
	}{
		{"workspace from the cwd, as the hook finds it", replay.Options{}, nil},
		{"--workspace", replay.Options{Workspace: ws}, nil},
		{"a stricter policy changes only the path inside", replay.Options{Policies: []string{stricter}}, []string{"5 allow->deny"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rep, err := replay.Replay(f, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rep.Changed {
				got = append(got, itoa(c.Seq)+" "+c.Was+"->"+c.Now)
			}
			if rep.Decided != len(calls) || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("decided %d, changes %q (%+v); want %d decided, changes %q", rep.Decided, got, rep.Changed, len(calls), tc.want)
			}
		})
	}
	// The workspace gone: what the hook refused stays refused.
	if err := os.Rename(ws, ws+".moved"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := replay.Replay(f, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Changed {
		if c.Was == "deny" {
			t.Errorf("workspace gone: %+v; a refusal of the hook's workspace check must stay", c)
		}
	}
}

// TestReplayScripts: an exec of a #! script logged before scripts were
// decided as themselves (argv as the kernel had it: env node npm ...,
// allowed as node) is flagged when a rule on the script now refuses it;
// one logged since (detail script) is re-decided as the script.
func TestReplayScripts(t *testing.T) {
	d, ws, log, w := replayWorld(t)
	tgt := filepath.Join(ws, "target")
	for _, e := range []audit.Event{
		{Event: audit.EventLaunch, Run: "r1", Role: "developer", Detail: map[string]string{"workspace": ws}},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:env node /usr/bin/npm publish", Argv: []string{"/usr/bin/env", "node", "/usr/bin/npm", "publish"}, Cwd: tgt, Exe: "/usr/bin/env", Decision: "allow"},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:sh ./shtool deploy", Argv: []string{"/bin/sh", "./shtool", "deploy"}, Cwd: tgt, Exe: "/usr/bin/dash", Decision: "allow"},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:shtool deploy", Argv: []string{"/bin/sh", "./shtool", "deploy"}, Cwd: tgt, Exe: "/usr/bin/dash", Decision: "allow",
			Detail: map[string]string{"script": "./shtool", "interpreter": "/bin/sh"}},
		{Event: audit.EventExec, Run: "r1", Role: "developer", Action: "tool:exec:shtool build", Argv: []string{"/bin/sh", "./shtool", "build"}, Cwd: tgt, Exe: "/usr/bin/dash", Decision: "allow",
			Detail: map[string]string{"script": "./shtool", "interpreter": "/bin/sh"}},
		{Event: audit.EventExit, Run: "r1"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	p := filepath.Join(d, "scripts.yaml")
	os.WriteFile(p, []byte("version: 1\nrules:\n  - {decision: deny, command: npm publish}\n  - {decision: deny, command: shtool deploy}\n  - {decision: allow, command: shtool}\n"), 0o600)
	f, _ := os.Open(log)
	defer f.Close()
	rep, err := replay.Replay(f, replay.Options{Policies: []string{p}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Changed {
		got = append(got, itoa(c.Seq)+" "+c.Was+"->"+c.Now)
	}
	if want := "2 allow->deny,3 allow->deny,4 allow->deny"; strings.Join(got, ",") != want {
		t.Errorf("changes %q, want %s", got, want)
	}
}
