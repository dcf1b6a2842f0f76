package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// peerCorpus is one file of testdata/peers: command lines and the verdict a
// peer's own sources give them.
type peerCorpus struct {
	Sources map[string]string `yaml:"sources"`
	Role    string            `yaml:"role"`
	Cases   []struct {
		From    string   `yaml:"from"`
		Argv    []string `yaml:"argv"`
		Action  string   `yaml:"action"`
		Peer    string   `yaml:"peer"`
		Differs string   `yaml:"differs"`
	} `yaml:"cases"`
}

// peerAllows says whether a peer verdict runs the command without a human.
var peerAllows = map[string]bool{"safe": true, "allow": true, "unsafe": false, "dangerous": false, "forbidden": false, "prompt": false, "ask": false}

// TestPeerCorpora decides every command line of the peers' published
// corpora (testdata/peers) and compares: what the peer runs without
// approval agentbox allows, what the peer asks about or forbids agentbox
// does not allow — or the case explains why agentbox differs. Dangerous and
// forbidden examples must never be allowed, explained or not.
func TestPeerCorpora(t *testing.T) {
	files, _ := filepath.Glob("testdata/peers/*.yaml")
	if len(files) == 0 {
		t.Fatal("no peer corpora in testdata/peers")
	}
	ws := t.TempDir()
	for _, a := range []string{"context", "target", "feedback", "agents"} {
		os.Mkdir(filepath.Join(ws, a), 0o755)
	}
	cwd := filepath.Join(ws, "target")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c peerCorpus
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		eng, err := Load(LoadOptions{Role: c.Role, Workspace: ws, NoUserFile: true})
		if err != nil {
			t.Fatal(err)
		}
		agree, differ := 0, 0
		for _, k := range c.Cases {
			want, known := peerAllows[k.Peer]
			if !known || c.Sources[k.From] == "" {
				t.Errorf("%s: case %v%s: unknown peer verdict %q or source %q", f, k.Argv, k.Action, k.Peer, k.From)
				continue
			}
			var res Result
			what := k.Action
			if len(k.Argv) > 0 {
				res = eng.Decide(Query{Argv: k.Argv, ExecContext: ExecContext{Cwd: cwd, Exe: ""}})
				what = strings.Join(k.Argv, " ")
			} else {
				tool, detail, _ := ParseAction(k.Action)
				if tool == ToolBash {
					res = eng.Decide(Query{Shell: detail, ExecContext: ExecContext{Cwd: cwd}})
				} else {
					res = eng.Decide(Query{Action: k.Action})
				}
			}
			got := res.Decision == Allow
			switch {
			case (k.Peer == "dangerous" || k.Peer == "forbidden") && got:
				t.Errorf("%s: %s: peer says %s, agentbox allows (%s): never acceptable", f, what, k.Peer, res.Reason)
			case got != want && k.Differs == "":
				t.Errorf("%s: %s: peer %s (%s), agentbox %s (%s): a new difference; fix agentbox or explain it with differs:", f, what, k.Peer, c.Sources[k.From], res.Decision, res.Reason)
			case got == want && k.Differs != "":
				t.Errorf("%s: %s: agentbox now agrees with the peer (%s); remove the stale differs: %q", f, what, res.Decision, k.Differs)
			case got != want:
				differ++
			default:
				agree++
			}
		}
		t.Logf("%s: %d cases, %d agree, %d differ deliberately", filepath.Base(f), len(c.Cases), agree, differ)
	}
}

// TestDecisionClasses pins the three classes where agentbox used to differ
// from the peers' corpora: work-destroying git spellings, options of
// read-only tools that run programs, and harmless lines that asked.
func TestDecisionClasses(t *testing.T) {
	eng, err := Load(LoadOptions{Role: "developer", NoUserFile: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want Decision
		rule string // rule id, when it matters
	}{
		// work-destroying git spellings: decided like restore / forced branch changes
		{"git checkout -- .", Ask, "developer/git.restore"},
		{"git checkout .", Ask, "developer/git.restore"},
		{"git checkout -- src/a.go", Ask, "developer/git.restore"},
		{"git checkout HEAD~1 src/a.go", Ask, "developer/git.restore"},
		{"git checkout -p", Ask, "developer/git.restore"},
		{"git checkout -f main", Ask, "developer/git.restore"},
		{"git switch --discard-changes main", Ask, "developer/git.restore"},
		{"git branch -D feature", Ask, "developer/git.branch.force"},
		{"git branch --delete --force feature", Ask, "developer/git.branch.force"},
		{"git branch -df feature", Ask, "developer/git.branch.force"},
		{"git branch -M old new", Ask, "developer/git.branch.force"},
		{"git stash drop", Ask, "developer/git.stash.drop"},
		{"git stash clear", Ask, "developer/git.stash.drop"},
		{"git checkout main", Allow, ""},
		{"git checkout -b feature origin/main", Allow, ""},
		{"git branch -d feature", Allow, ""},
		{"git stash pop", Allow, ""},
		// options of read-only tools that run programs
		{"rg --hostname-bin=evil pattern", Ask, ""},
		{"rg --hostname-bin evil pattern", Ask, ""},
		{"git diff --ext-diff", Ask, ""},
		{"git log --textconv", Ask, ""},
		{"git -p log", Ask, ""},
		{"git --paginate show HEAD", Ask, ""},
		{"git log -p", Allow, ""},
		{"git --no-pager diff", Allow, ""},
		// harmless lines
		{"true", Allow, ""},
		{"false", Allow, ""},
		{"cd src", Allow, ""},
		{"cd src && true", Allow, ""},
		{"base64 file", Allow, ""},
		{"tac file", Allow, ""},
		{"rev file", Allow, ""},
		{"paste a b", Allow, ""},
		{"numfmt --to=iec 1000", Allow, ""},
		{"fold -w 80 file", Allow, ""},
		{"cd $(git push)", Deny, "developer/git.push"},
	} {
		res := eng.Decide(Query{Shell: tc.line})
		id := ""
		if res.Rule != nil {
			id = res.Rule.ID
		}
		if res.Decision != tc.want || (tc.rule != "" && id != tc.rule) {
			t.Errorf("%q = %s by %q (%s); want %s by %q", tc.line, res.Decision, id, res.Reason, tc.want, tc.rule)
		}
	}
}
