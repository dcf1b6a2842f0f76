package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// endLines says how a run ended, in one or two lines for its terminal:
// the exit status and what it means (a limit, the timeout, a signal, a
// refusal), what the policy refused, what changed, and the command that
// looks at it or takes it back from any directory. Paths and actions are
// the agent's: escaped.
func endLines(res *agentbox.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox: run %s ended: %s", res.RunID, exitMeaning(res))
	if res.Refused > 0 {
		fmt.Fprintf(&b, "; %d refused (first: %s)", res.Refused, shellquote.Sanitize(res.FirstRefused))
	}
	switch {
	case res.ChangedCount == 0 && (res.Checkpointed || res.Review):
		b.WriteString("; no file changed")
	case res.ChangedCount > 0:
		shown := make([]string, 0, 3)
		stands := 0 // paths the shown entries stand for ("proj/.git: 13 files" is 13)
		for _, p := range res.Changed[:min(3, len(res.Changed))] {
			shown = append(shown, shellquote.Sanitize(p))
			stands += entryPaths(p)
		}
		more := ""
		if n := res.ChangedCount - stands; n > 0 {
			more = fmt.Sprintf(", +%d more", n)
		}
		fmt.Fprintf(&b, "; %d %s changed (%s%s)", res.ChangedCount, plural(res.ChangedCount, "file", "files"), strings.Join(shown, ", "), more)
	}
	b.WriteString("\n")
	ws := []string{"--workspace", res.Workspace}
	switch {
	case res.Review && res.ChangedCount > 0:
		fmt.Fprintf(&b, "agentbox: review: %s; apply: %s; discard: %s\n",
			shellquote.Command(append([]string{"agentbox", "diff"}, append(ws, res.RunID)...)),
			shellquote.Command(append([]string{"agentbox", "apply"}, append(ws, res.RunID)...)),
			shellquote.Command(append([]string{"agentbox", "discard"}, append(ws, res.RunID)...)))
	case res.Checkpointed && res.ChangedCount > 0:
		fmt.Fprintf(&b, "agentbox: see: %s; undo: %s\n",
			shellquote.Command(append([]string{"agentbox", "changes"}, ws...)),
			shellquote.Command(append([]string{"agentbox", "undo"}, append(ws, res.RunID)...)))
	}
	return b.String()
}

// entryPaths is how many changed paths one entry of Result.Changed stands
// for: a repository's .git internals ("proj/.git: 13 files") many, a path one.
func entryPaths(e string) int {
	if i := strings.LastIndex(e, ".git: "); i >= 0 {
		var n int
		if _, err := fmt.Sscanf(e[i+len(".git: "):], "%d", &n); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// exitMeaning is the exit status and why, as a user reads it.
func exitMeaning(res *agentbox.Result) string {
	code := res.ExitCode
	switch {
	case res.TimedOut:
		return fmt.Sprintf("exit %d: the run's timeout (--timeout) ended it", code)
	case res.Stopped:
		return fmt.Sprintf("exit %d: stopped (agentbox stop)", code)
	case res.OOMKills > 0:
		limit := ""
		if res.MemoryLimit > 0 {
			limit = fmt.Sprintf(" of %d MiB", res.MemoryLimit>>20)
		}
		return fmt.Sprintf("exit %d: the memory limit%s (--memory) killed %d %s", code, limit, res.OOMKills, plural(res.OOMKills, "process", "processes"))
	case res.AuditError != nil:
		return fmt.Sprintf("exit %d: the audit log failed (%v)", code, res.AuditError)
	}
	var s string
	switch {
	case code == 0:
		s = "exit 0"
	case code == agentbox.ExitDenied:
		s = fmt.Sprintf("exit %d: a program was refused or not executable", code)
	case code == agentbox.ExitNotFound:
		s = fmt.Sprintf("exit %d: command not found", code)
	case code == agentbox.ExitFailure:
		s = fmt.Sprintf("exit %d: agentbox could not run it", code)
	case code > 128 && code < 128+65:
		s = fmt.Sprintf("exit %d: killed by %s", code, signalName(syscall.Signal(code-128)))
	default:
		s = fmt.Sprintf("exit %d", code)
	}
	if res.PidsMaxHits > 0 {
		limit := ""
		if res.PidsLimit > 0 {
			limit = fmt.Sprintf(" of %d", res.PidsLimit)
		}
		s += fmt.Sprintf("; the process limit%s (--pids) refused %d %s", limit, res.PidsMaxHits, plural(res.PidsMaxHits, "fork", "forks"))
	}
	return s
}

// signalName is SIGKILL for 9: the name users search for.
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGTERM: "SIGTERM", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGILL: "SIGILL", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ"}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// summaryJSON is --json-summary's document: the end line as data.
type summaryJSON struct {
	Run          string   `json:"run"`
	Workspace    string   `json:"workspace"`
	ExitCode     int      `json:"exit_code"`
	Meaning      string   `json:"meaning"`
	TimedOut     bool     `json:"timed_out,omitempty"`
	Stopped      bool     `json:"stopped,omitempty"`
	OOMKills     int      `json:"oom_kills,omitempty"`
	PidsMaxHits  int      `json:"pids_max_hits,omitempty"`
	Refused      int      `json:"refused"`
	FirstRefused string   `json:"first_refused,omitempty"`
	ChangedCount int      `json:"changed_count"`
	Changed      []string `json:"changed,omitempty"`
	Review       bool     `json:"review,omitempty"`
	Checkpointed bool     `json:"checkpointed,omitempty"`
	Commits      int      `json:"commits,omitempty"`
}

// writeSummary writes res to file as summaryJSON (0600: it names what the
// agent did), replacing it whole.
func writeSummary(file string, res *agentbox.Result) error {
	b, err := json.MarshalIndent(summaryJSON{Run: res.RunID, Workspace: res.Workspace, ExitCode: res.ExitCode, Meaning: exitMeaning(res),
		TimedOut: res.TimedOut, Stopped: res.Stopped, OOMKills: res.OOMKills, PidsMaxHits: res.PidsMaxHits,
		Refused: res.Refused, FirstRefused: res.FirstRefused, ChangedCount: res.ChangedCount, Changed: res.Changed,
		Review: res.Review, Checkpointed: res.Checkpointed, Commits: res.Commits}, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
