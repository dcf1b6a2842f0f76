package load_test

import (
	"errors"
	"testing"

	"github.com/agentbox/agentbox/internal/testkit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// writePolicy writes content to a private (0600) file in a temp dir.
var writePolicy = testkit.PrivateFile

// validateFiles is load.Files, its problems as a list.
func validateFiles(paths ...string) []error {
	_, err := load.Files(paths...)
	if err == nil {
		return nil
	}
	var es policy.Errors
	if errors.As(err, &es) {
		return es
	}
	return []error{err}
}

// decCase is an action and the decision it should get.
type decCase struct {
	in   string
	want policy.Decision
}

func checkCases(t *testing.T, e *policy.Engine, cases []decCase) {
	t.Helper()
	for _, c := range cases {
		got := e.Decide(policy.Query{Action: c.in})
		if got.Decision != c.want {
			t.Errorf("Decide(%q) = %s, want %s (reason: %s; floor: %s)", c.in, got.Decision, c.want, got.Reason, got.Floor)
		}
	}
}
