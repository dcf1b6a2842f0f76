package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// TestAuditReportHTMLQuietAndRunColumns: with --html FILE nothing but
// the one line saying where goes out (no text report on stdout); --html -
// puts the page alone on stdout; the page's Runs table names each run's
// command and workspace from its launch event.
func TestAuditReportHTMLQuietAndRunColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Event{
		{Event: "launch", Agent: "a1", Role: "developer", Run: "r1", Argv: []string{"make", "test it"}, Detail: map[string]string{"workspace": "/home/u/ws"}},
		{Event: "exec", Agent: "a1", Run: "r1", Action: "tool:exec:ls", Decision: "allow"},
	} {
		if err := w.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	page := filepath.Join(t.TempDir(), "report.html")
	cases := []struct {
		name    string
		args    []string
		stdout  func(string) bool
		wantOut string
	}{
		{"to a file", []string{"--html", page}, func(s string) bool { return s == "" }, "nothing"},
		{"to stdout", []string{"--html", "-"}, func(s string) bool {
			return strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "<!doctype html") && strings.HasSuffix(strings.TrimSpace(s), "</html>")
		}, "the page only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", append([]string{"audit", "report", "--file", path}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !c.stdout(out) {
				t.Fatalf("stdout is not %s:\n%.400s", c.wantOut, out)
			}
			html := out
			if c.args[1] != "-" {
				b, err := os.ReadFile(page)
				if err != nil {
					t.Fatal(err)
				}
				html = string(b)
				if !strings.Contains(errOut, "agentbox: report written to "+page) {
					t.Errorf("stderr %q does not say where", errOut)
				}
			}
			for _, want := range []string{"<th>command</th><th>workspace</th>", "<code>make &#39;test it&#39;</code></td><td>/home/u/ws</td>"} {
				if !strings.Contains(html, want) {
					t.Errorf("page lacks %q", want)
				}
			}
		})
	}
}
