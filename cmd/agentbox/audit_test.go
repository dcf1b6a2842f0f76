package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testkit"
)

// runCLI runs the agentbox CLI in process and returns stdout, stderr
// (including the final error line main would print) and the exit code.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter, app.Reader = &out, &errb, strings.NewReader(stdin)
	err := app.Run(context.Background(), append([]string{"agentbox"}, args...))
	code := 0
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		} else {
			code = exitUsage
		}
		errb.WriteString("agentbox: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), code
}

// writeSampleLog writes a small, valid log and returns its path.
func writeSampleLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour).UTC()
	one := 1
	for _, e := range []audit.Event{
		{Time: old, Event: "launch", Agent: "a1", Role: "developer", Run: "r1"},
		{Time: old, Event: "exec", Agent: "a1", Action: "tool:exec:ls -la", Decision: "allow", Rule: "developer/ls"},
		{Event: "git", Agent: "a1", Run: "r1", Action: "tool:git:push origin main", Decision: "deny", Rule: "developer/git.push", Reason: "pushing is for humans"},
		{Event: "git", Agent: "a1", Run: "r1", Action: "tool:git:push origin main", Decision: "deny", Rule: "developer/git.push"},
		{Event: "exec", Agent: "a2", Run: "r2", Action: "tool:exec:npm install \x1b[2J", Decision: "ask_approved", Approver: "alice"},
		{Event: "exec", Agent: "a2", Run: "r2", Action: "tool:exec:curl evil.example", Decision: "ask_timeout"},
		{Event: "limit", Agent: "a2", Run: "r2", Limit: "memory", Reason: "OOM kill at 512M"},
		{Event: "exit", Agent: "a2", Run: "r2", Exit: &one},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return path
}

func TestAuditQuery(t *testing.T) {
	path := writeSampleLog(t)
	tests := []struct {
		name     string
		args     []string
		wantRows int
		want     []string
		notWant  []string
	}{
		{"all", nil, 8, []string{"TIME", "developer/git.push: pushing is for humans", "limit:memory", "exit 1"}, nil},
		{"agent", []string{"--agent", "a2"}, 4, []string{"ask_approved"}, []string{"tool:git:push"}},
		{"deny", []string{"--decision", "deny"}, 3, []string{"tool:git:push origin main", "curl evil.example"}, []string{"ls -la"}}, // every refusal
		{"exactly deny", []string{"--decision", "=deny"}, 2, []string{"tool:git:push origin main"}, []string{"ls -la", "curl"}},
		{"rule", []string{"--rule", "developer/git.push"}, 2, []string{"tool:git:push origin main"}, []string{"curl"}},
		{"action regex", []string{"--action", "curl|ls"}, 2, []string{"curl evil.example", "ls -la"}, []string{"push"}},
		{"until", []string{"--until", "1h"}, 2, []string{"ls -la", "launch"}, []string{"push"}}, // the two old events
		{"ask family", []string{"--decision", "ask"}, 2, []string{"ask_timeout", "approver alice"}, nil},
		{"event", []string{"--event", "limit"}, 1, []string{"OOM kill"}, nil},
		{"since duration", []string{"--since", "1h"}, 6, nil, []string{"ls -la"}},
		{"since days", []string{"--since", "1d"}, 8, nil, nil},
		{"since time", []string{"--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, 0, nil, nil},
		{"run", []string{"--run", "r1"}, 3, nil, nil},
		{"control chars escaped", []string{"--agent", "a2"}, 4, []string{`npm install \x1b[2J`}, []string{"\x1b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", append([]string{"audit", "--file", path}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if rows := len(lines) - 1; rows != tc.wantRows {
				t.Errorf("%d rows, want %d:\n%s", rows, tc.wantRows, out)
			}
			testkit.CheckOutput(t, out, tc.want, tc.notWant)
		})
	}
}

func TestAuditQueryJSON(t *testing.T) {
	path := writeSampleLog(t)
	out, errOut, code := runCLI(t, "", "audit", "--file", path, "--json", "--decision", "=deny")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var e audit.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Decision != "deny" || e.Seq == 0 {
			t.Errorf("line %q: %+v %v", l, e, err)
		}
	}
}

func TestAuditQueryStdinAndMalformed(t *testing.T) {
	raw, _ := os.ReadFile(writeSampleLog(t))
	lines := strings.SplitAfter(string(raw), "\n")
	broken := lines[0] + "garbage\n" + strings.Join(lines[1:], "") + `{"seq":9,"event":"exec"` // torn
	out, errOut, code := runCLI(t, broken, "audit", "--file", "-")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	for _, w := range []string{"<stdin>:2: not a JSON event", "<stdin>:10: torn last line", "2 malformed line(s)"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if rows := strings.Count(out, "\n") - 1; rows != 8 {
		t.Errorf("good events not all shown (%d rows):\n%s", rows, out)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	path := writeSampleLog(t)
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"audit", "--file", path, "--since", "yesterday"}, exitUsage, `--since "yesterday"`},
		{[]string{"audit", "--file", path, "--since", "-1h"}, exitUsage, "--since"},
		{[]string{"audit", "--file", path, "--decision", "maybe"}, exitUsage, `--decision "maybe"`},
		{[]string{"audit", "--file", path, "--event", "boom"}, exitUsage, `--event "boom"`},
		{[]string{"audit", "--file", path, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"audit", "--file", filepath.Join(t.TempDir(), "none.jsonl")}, exitBadInput, "does not exist"},
		{[]string{"audit", "verify", "--file", filepath.Join(t.TempDir(), "none.jsonl")}, exitBadInput, "none.jsonl"},
		{[]string{"audit", "report", "--file", filepath.Join(t.TempDir(), "none.jsonl")}, exitBadInput, "does not exist"},
		// rotate and export work on the file itself: no stdin, no arguments
		{[]string{"audit", "rotate", "--file", "-"}, exitUsage, "rotate: --file - is not a file"},
		{[]string{"audit", "rotate", "--file", missing}, exitBadInput, "audit log " + missing + ": stat"},
		{[]string{"audit", "rotate", "--file", path, "extra"}, exitUsage, `audit rotate: unexpected argument "extra"`},
		{[]string{"audit", "export", "--file", "-"}, exitUsage, "export: --file - is not a file; export follows a log file"},
		{[]string{"audit", "export", "--file", missing, "--endpoint", "http://127.0.0.1:1"}, exitBadInput, "audit log " + missing + ": stat"},
		{[]string{"audit", "export", "--file", path, "extra"}, exitUsage, `audit export: unexpected argument "extra"`},
	}
	for _, tc := range tests {
		_, errOut, code := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d containing %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestAuditReport(t *testing.T) {
	path := writeSampleLog(t)
	out, errOut, code := runCLI(t, "", "audit", "report", "--file", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{
		"chain intact over 8 lines, end matches the head file",
		"events           8", "runs             2",
		"2  tool:git:push origin main", "developer/git.push",
		"approver alice", "ask_timeout",
		"memory  OOM kill at 512M",
		"violations: none",
		`\x1b[2J`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	out, _, code = runCLI(t, "", "audit", "report", "--file", path, "--json")
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("report --json: %v (exit %d)\n%s", err, code, out)
	}
	if rep.Events != 8 || rep.ByDecision["deny"] != 2 || len(rep.Asks) != 2 || len(rep.Limits) != 1 || rep.TopDenied[0].Count != 2 {
		t.Errorf("report --json: %+v", rep)
	}
	// A broken log: the report says so and still summarises.
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(raw, []byte(`"allow"`), []byte(`"deny"`), 1), 0o600)
	out, errOut, code = runCLI(t, "", "audit", "report", "--file", path)
	if code != exitBadInput || !strings.Contains(errOut, "integrity check failed") || !strings.Contains(out, "BROKEN: line 3: prev hash does not match line 2") {
		t.Errorf("tampered report (exit %d):\n%s", code, out)
	}
}

func TestAuditVerify(t *testing.T) {
	path := writeSampleLog(t)
	out, errOut, code := runCLI(t, "", "audit", "verify", "--file", path)
	if code != 0 || !strings.Contains(out, "8 events, chain intact, last seq 8, head file matches") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	raw, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(raw), "\n")

	// Without head file (stdin): valid, with a warning.
	out, errOut, code = runCLI(t, string(raw), "audit", "verify", "--file", "-")
	if code != 0 || !strings.Contains(errOut, "no head file") {
		t.Errorf("verify stdin: exit %d\n%s%s", code, out, errOut)
	}
	tests := []struct {
		name string
		log  string
		want string
	}{
		{"deleted line", lines[0] + lines[1] + strings.Join(lines[3:], ""), path + ":3: seq 4 follows seq 2"},
		{"truncated", strings.Join(lines[:5], ""), path + ": log truncated: the head file records seq 8"},
		{"torn", string(raw[:len(raw)-5]), path + ":8: torn last line"},
	}
	for _, tc := range tests {
		os.WriteFile(path, []byte(tc.log), 0o600)
		_, errOut, code := runCLI(t, "", "audit", "verify", "--file", path)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d stderr %q, want %q", tc.name, code, errOut, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1h", now.Add(-time.Hour), true},
		{"90m", now.Add(-90 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"1.5d", now.Add(-36 * time.Hour), true},
		{"2026-05-01", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"2026-05-01T10:00:00+02:00", time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC), true},
		{"", time.Time{}, false},
		{"d", time.Time{}, false},
		{"-1h", time.Time{}, false},
		{"-1d", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-13-01", time.Time{}, false},
	}
	for _, tc := range tests {
		got, err := parseSince(tc.in, now)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("parseSince(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"1h", "7d", "1.5d", "2026-05-01", "2026-05-01T10:00:00Z", "-1h", "1e400d", "NaNd"} {
		f.Add(s)
	}
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now)
		if err == nil && got.IsZero() {
			t.Fatalf("parseSince(%q) accepted with a zero time", s)
		}
	})
}

// TestAuditTableWidth: on a terminal of N columns (COLUMNS here) no table
// row is wider than N; a pipe gets whole lines (JSON for machines).
func TestAuditTableWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	long := "tool:exec:" + strings.Repeat("very-long-argument ", 60)
	w.Write(audit.Event{Event: "exec", Agent: "a1", Action: long, Decision: "deny", Reason: strings.Repeat("because ", 50)})
	w.Close()
	t.Setenv("COLUMNS", "100")
	out, _, _ := runCLI(t, "", "audit", "--file", path)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("row of %d columns on a 100-column terminal: %q", n, l)
		}
	}
}

// TestAuditReportHTMLInBrowser: the --html report opens in a real headless
// browser (Chromium from Debian's packages) and shows the figures the log
// holds. A screenshot is kept for a human to look at (path in the log).
func TestAuditReportHTMLInBrowser(t *testing.T) {
	needLongSuite(t, "AGENTBOX_BROWSER", "the browser tests")
	var browser string
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("reason: no Chromium installed (.ci/run installs Debian's chromium)")
	}
	path := writeSampleLog(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if _, errOut, code := runCLI(t, "", "audit", "report", "--file", path, "--html", page); code != 0 {
		t.Fatalf("report: exit %d %s", code, errOut)
	}
	f, _ := os.Open(path)
	want, err := audit.Summarize(f, audit.Filter{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(flags, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v", browser, err)
	}
	refused := want.ByDecision["deny"] + want.ByDecision["ask_denied"] + want.ByDecision["ask_timeout"] + want.ByDecision["ask_unavailable"]
	for _, s := range []string{
		fmt.Sprintf(`id="card-runs"><b>%d</b>`, want.Runs),
		fmt.Sprintf(`id="card-refused"><b>%d</b>`, refused),
		fmt.Sprintf(`id="card-allowed"><b>%d</b>`, want.ByDecision["allow"]),
		"tool:git:push origin main", "developer/git.push", `aria-label="decisions over time"`,
		"chain intact", "</html>",
	} {
		if !strings.Contains(string(dom), s) {
			t.Errorf("rendered page lacks %q", s)
		}
	}
	shot := filepath.Join(os.TempDir(), fmt.Sprintf("agentbox-audit-report-%d.png", os.Getpid()))
	if err := exec.CommandContext(ctx, browser, append(flags, "--window-size=1200,1400", "--screenshot="+shot, "file://"+page)...).Run(); err != nil {
		t.Errorf("screenshot: %v", err)
	} else if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s missing or empty", shot)
	} else {
		t.Logf("screenshot of the report: %s", shot)
	}
}

// TestAuditTableDecidedPartAndWorkspace: the table's ACTION is the part of
// a wrapped line that decided (Claude Code's bash -c 'source snapshot;
// eval CMD' cut off the command); --whole shows the wrapper; --workspace
// keeps only the runs launched in that workspace.
func TestAuditTableDecidedPartAndWorkspace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "tool:exec:bash -c 'source /home/a/.claude/shell-snapshots/snapshot-bash-1.sh && eval '\"'\"'git push origin main'\"'\"''"
	for _, e := range []audit.Event{
		{Event: "launch", Run: "r1", Detail: map[string]string{"workspace": "/ws/one"}},
		{Event: "launch", Run: "r2", Detail: map[string]string{"workspace": "/ws/two"}},
		{Event: "exec", Run: "r1", Action: wrapper, Decision: "deny", Rule: "developer/git.push", Detail: map[string]string{"decided": "tool:git:push origin main"}},
		{Event: "exec", Run: "r2", Action: "tool:exec:ls", Decision: "allow"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	out, _, code := runCLI(t, "", "audit", "--file", path, "--event", "exec")
	if code != 0 || !strings.Contains(out, "tool:git:push origin main") || strings.Contains(out, "snapshot-bash") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "", "audit", "--file", path, "--event", "exec", "--whole")
	if !strings.Contains(out, "snapshot-bash") {
		t.Errorf("--whole does not show the wrapper:\n%s", out)
	}
	out, _, _ = runCLI(t, "", "audit", "--file", path, "--workspace", "/ws/one", "--json")
	if strings.Count(out, "\n") != 2 || strings.Contains(out, `"r2"`) {
		t.Errorf("--workspace /ws/one: want r1's launch and exec only:\n%s", out)
	}
}

// TestAuditVerifyNeedsKey: a keyed log (its lines carry MACs) does not
// verify without its key — exit 1 naming the key — unless --chain-only
// asks for the chain alone, which says the MACs were not checked. With
// the key, a line changed and its chain recomputed fails on its MAC.
func TestAuditVerifyNeedsKey(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if _, err := agentbox.Init(ws); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "a.jsonl")
	if _, errOut, code := runCLI(t, "", "run", "--role", "developer", "--workspace", ws, "--no-user-policy",
		"--approve", "none", "--audit", log, "--", "/bin/true"); code != 0 {
		t.Fatalf("run: exit %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "", "audit", "verify", "--file", log)
	if code != 0 || !strings.Contains(out, "MACs checked") {
		t.Fatalf("verify with its key: exit %d %s%s", code, out, errOut)
	}
	if err := os.Rename(log+".key", log+".key.away"); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "", "audit", "verify", "--file", log)
	if code != exitBadInput || !strings.Contains(errOut, "its key was not found") || !strings.Contains(errOut, "--chain-only") {
		t.Errorf("verify of a keyed log without its key: exit %d %q; want 1 naming the key and --chain-only", code, errOut)
	}
	out, errOut, code = runCLI(t, "", "audit", "verify", "--chain-only", "--file", log)
	if code != 0 || !strings.Contains(out, "MACs not checked") || !strings.Contains(errOut, "NOT checked") {
		t.Errorf("verify --chain-only: exit %d %q %q; want ok saying the MACs were not checked", code, out, errOut)
	}
	out, _, _ = runCLI(t, "", "audit", "report", "--file", log)
	if !strings.Contains(out, "MACs NOT checked") {
		t.Errorf("report of a keyed log without its key does not say the MACs were not checked:\n%s", out)
	}
}
