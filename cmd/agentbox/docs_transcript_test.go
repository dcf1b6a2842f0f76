package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// transcriptBlock is a README block of commands ("$ ...") and their
// output, marked <!-- transcript -->.
var transcriptBlock = regexp.MustCompile("(?s)<!-- transcript -->\n```console\n(.*?)```")

// normalize blanks what differs from run to run: run ids (12 hex
// digits), times, audit seqs; and the world's workspace path is ~/ws.
func normalize(s, ws string) string {
	if ws != "" {
		s = strings.ReplaceAll(s, ws, "~/ws")
	}
	s = regexp.MustCompile(`[0-9a-f]{12}`).ReplaceAllString(s, "RUN")
	s = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).ReplaceAllString(s, "TIME")
	s = regexp.MustCompile(`seq \d+`).ReplaceAllString(s, "seq N")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// matchOutput compares output with the README's lines; a line "…"
// stands for any lines (none included).
func matchOutput(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "…" {
		for i := 0; i <= len(got); i++ {
			if matchOutput(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && got[0] == want[0] && matchOutput(want[1:], got[1:])
}

// TestDocsReviewUndoTranscripts: README's walk-throughs of the review
// and undo flows are real: each command is run in a workspace whose
// target/proj is a git repository, as README says, and prints what README
// shows (run ids, times and seqs aside; "…" stands for the launch line
// and whatever lines it elides).
func TestDocsReviewUndoTranscripts(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := transcriptBlock.FindAllStringSubmatch(string(data), -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d transcript blocks; want the review and the undo walk-throughs", len(blocks))
	}
	w := newAgentWorld(t)
	if os.Geteuid() != 0 {
		t.Skip("reason: the review walk-through mounts the overlay as root")
	}
	elsewhere := t.TempDir()
	dir := w.proj
	hexID := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	last := "" // the id of the last run that ended: README's example id stands for it
	for _, b := range blocks {
		type step struct {
			cmd  string
			want []string
		}
		var steps []step
		for _, l := range strings.Split(strings.TrimRight(b[1], "\n"), "\n") {
			if c, ok := strings.CutPrefix(l, "$ "); ok {
				steps = append(steps, step{cmd: c})
			} else if len(steps) > 0 {
				steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
			}
		}
		for _, s := range steps {
			if d, ok := strings.CutPrefix(s.cmd, "cd "); ok {
				switch d = strings.TrimSpace(d); d {
				case "/tmp":
					dir = elsewhere
				default:
					dir = strings.Replace(d, "~/ws", w.ws, 1)
				}
				continue
			}
			line := strings.ReplaceAll(s.cmd, "~/ws", w.ws)
			if last != "" {
				line = hexID.ReplaceAllString(line, last)
			}
			cmd := exec.Command("sh", "-c", line)
			cmd.Dir, cmd.Env = dir, w.env()
			out, _ := cmd.CombinedOutput()
			if m := regexp.MustCompile(`agentbox: run ([0-9a-f]{12}) ended`).FindSubmatch(out); m != nil {
				last = string(m[1])
			}
			got := strings.Split(normalize(string(out), w.ws), "\n")
			if normalize(string(out), w.ws) == "" {
				got = nil
			}
			want := strings.Split(normalize(strings.Join(s.want, "\n"), ""), "\n")
			if len(s.want) == 0 {
				want = nil
			}
			if os.Getenv("AGENTBOX_DOCS_PRINT") != "" {
				t.Logf("$ %s\n%s", s.cmd, out)
			}
			if !matchOutput(want, got) {
				t.Errorf("README: `%s` prints\n%s\nREADME shows\n%s", s.cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
