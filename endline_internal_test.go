package agentbox

import (
	"slices"
	"testing"
)

// TestShownChanges: the end line lists a run's files first and each
// repository's .git internals as one entry.
func TestShownChanges(t *testing.T) {
	got := shownChanges([]string{"target/p/.git/index", "target/p/a.go", "target/p/.git/objects/ab/cd", "target/p/.git/refs/heads/main", "target/b.txt"})
	want := []string{"target/p/a.go", "target/b.txt", "target/p/.git: 3 files"}
	if !slices.Equal(got, want) {
		t.Errorf("shownChanges = %q, want %q", got, want)
	}
}
