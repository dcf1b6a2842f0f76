package replay_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/replay"
	"github.com/agentbox/agentbox/internal/boundary"
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
