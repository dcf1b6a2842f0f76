package remember

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListAndRemoveRule(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agentbox.yaml")
	if err := os.WriteFile(p, []byte("version: 1\nrules:\n  - decision: allow\n    command: chmod 600\n    description: remembered approval by inbox user=alice at 2026-11-25T00:00:00Z\n  - {decision: deny, command: curl}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := List(p)
	if err != nil || len(l) != 2 || l[0].Match != `command "chmod 600"` || l[0].Decision != "allow" || !strings.Contains(l[0].Description, "alice") {
		t.Fatalf("List: %+v %v", l, err)
	}
	if _, err := RemoveRule(p, l[0].Key, "something else"); err == nil {
		t.Errorf("a rule whose text changed was removed")
	}
	removed, err := RemoveRule(p, l[0].Key, l[0].Text)
	if err != nil || !strings.Contains(removed, "chmod 600") {
		t.Fatalf("RemoveRule: %q %v", removed, err)
	}
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), "chmod") || !strings.Contains(string(data), "curl") {
		t.Errorf("after removal:\n%s", data)
	}
	if _, err := RemoveRule(p, "rules/5", ""); err == nil {
		t.Errorf("removing a rule that is not there succeeded")
	}
	// Codelia
	c := filepath.Join(dir, "codelia.json")
	os.WriteFile(c, []byte(`{"permissions":{"allow":[{"tool":"bash","command":"make test"}]}}`), 0o644)
	if l, err := List(c); err != nil || len(l) != 1 || l[0].Decision != "allow" || l[0].Key != "permissions/allow/0" {
		t.Errorf("Codelia List: %+v %v", l, err)
	}
}

// FuzzListRemove: List and RemoveRule on any file content never panic,
// and a removal that succeeds leaves one rule fewer.
func FuzzListRemove(f *testing.F) {
	f.Add([]byte("version: 1\nrules:\n  - {decision: allow, command: ls}\n  - {decision: deny, command: rm}\n"))
	f.Add([]byte(`{"permissions":{"allow":[{"tool":"bash","command":"ls"}],"deny":[]}}`))
	f.Add([]byte("rules: 7\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "agentbox.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := List(p)
		if err != nil || len(l) == 0 {
			return
		}
		if _, err := RemoveRule(p, l[0].Key, l[0].Text); err != nil {
			return
		}
		after, err := List(p)
		if err != nil || len(after) != len(l)-1 {
			t.Fatalf("after a removal: %d rules (was %d), %v", len(after), len(l), err)
		}
	})
}
