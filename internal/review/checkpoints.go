package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/gitsum"
	"github.com/agentbox/agentbox/internal/shellquote"
	"github.com/agentbox/agentbox/policy"
)

// CommandChanges is one command of a run and what changed in target/ and
// feedback/ from the checkpoint before it to the next one (Changes).
type CommandChanges = checkpoint.Step

// PathChange is one path that changed, named with its area ("target/a.c").
type PathChange = checkpoint.AreaChange

// RecordedRun is the first line of a run's checkpoint index: its id,
// start time and the areas its checkpoints cover.
type RecordedRun = checkpoint.IndexEntry

// ErrRunLive is wrapped by Undo's error for a run still going.
var ErrRunLive = checkpoint.ErrLive

// ErrNoCheckpoints is wrapped by Changes' and Undo's errors for a run the
// store has no checkpoints of.
var ErrNoCheckpoints = checkpoint.ErrNoRun

// CheckpointStore returns the checkpoint store of workspace: store when
// given, else the default one (WithCheckpoints).
func CheckpointStore(workspace, store string) (string, error) {
	if store != "" {
		return filepath.Abs(store)
	}
	// the agent does not change where the workspace is ("main" is the
	// agent of a run without --agent)
	b, err := boundary.Resolve(workspace, "main", policy.FSGrants{})
	if err != nil {
		return "", err
	}
	return checkpoint.DefaultDir(b.Workspace), nil
}

// RecordedRuns lists the runs with checkpoints in the store, oldest first.
func RecordedRuns(store string) ([]RecordedRun, error) { return checkpoint.Runs(store) }

// Changes lists, per command of run, what changed in the workspace's
// writable areas (from the checkpoint store; nothing is read from the
// areas themselves).
func Changes(store, run string) ([]CommandChanges, error) {
	steps, _, err := checkpoint.Changes(store, run)
	return steps, err
}

// Excluded lists what run's checkpoints left out ("target/node_modules",
// a file over the size limit): an undo neither restores nor removes it.
func Excluded(store, run string) ([]string, error) { return checkpoint.Excluded(store, run) }

// UndoOptions say what Undo restores: everything the run changed (zero
// value), the state before the command with audit seq To, or only what
// command Only changed.
type UndoOptions struct {
	To, Only uint64
	DryRun   bool // say what would change; change nothing
	Force    bool // overwrite paths changed since the run, outside it
}

// Undo puts the writable areas back as run found them (or before command
// To, or reverts command Only). It refuses a live run, changes nothing on
// a conflict (*checkpoint.ConflictError) or a corrupted store, and records
// itself so that Undo of the result's Redo brings the work back.
func Undo(store, run string, o UndoOptions) (*checkpoint.UndoResult, error) {
	return checkpoint.Undo(store, run, checkpoint.UndoOptions{To: o.To, Only: o.Only, DryRun: o.DryRun, Force: o.Force,
		Options: checkpoint.Options{ExcludeNames: checkpoint.DefaultExcludeNames, MaxFileSize: checkpoint.DefaultMaxFileSize}})
}

// ChangeDiff is a unified diff (diff -u) of one changed path of a step
// of run, from the store's copies; a binary file is named, not shown.
// Control characters are shown escaped: paths and contents are the
// agent's.
func ChangeDiff(store, run string, st CommandChanges, path string) (string, error) {
	areas, err := checkpoint.RunAreas(store, run)
	if err != nil {
		return "", err
	}
	a, b, err := checkpoint.Contents(store, areas, st.Before, st.After, path)
	if err != nil {
		return "", err
	}
	if a == "" {
		a = "/dev/null"
	}
	if b == "" {
		b = "/dev/null"
	}
	if binary(a) || binary(b) {
		return fmt.Sprintf("Binary files a/%s and b/%s differ\n", escapeControls(path), escapeControls(path)), nil
	}
	out, err := exec.Command("diff", "-u", "--label", "a/"+path, "--label", "b/"+path, a, b).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return "", fmt.Errorf("diff of %s: %w", path, err)
	}
	return escapeControls(string(out)), nil
}

// escapeControls escapes s line by line as shellquote.Sanitize does (control
// characters, invalid UTF-8, invisible formatting runes), keeping the line
// breaks, so a diff cannot drive the reader's terminal.
func escapeControls(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = shellquote.Sanitize(l)
	}
	return strings.Join(lines, "\n")
}

// binary reports whether the file looks binary: a NUL byte or invalid
// UTF-8 in its first 8 KiB (what git and diff look at).
func binary(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	// a rune cut at the end of the sample is not invalid
	return bytes.IndexByte(buf, 0) >= 0 || !utf8.Valid(trimPartialRune(buf))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// EscapeControls escapes what could drive a terminal (control characters
// other than newlines, invalid UTF-8, bidi overrides) in names and contents
// the agent wrote, as shellquote.Sanitize does.
func EscapeControls(s string) string { return escapeControls(s) }

// ChangesGitSummary separates the changes of one step of run inside .git
// directories from the others (rest, in order) and summarises them per
// repository, from the store's copies (no git is run).
func ChangesGitSummary(store, run string, st CommandChanges) (rest []PathChange, sums []GitSummary, err error) {
	areas, err := checkpoint.RunAreas(store, run)
	if err != nil {
		return nil, nil, err
	}
	in := make([]gitsum.Change, len(st.Changes))
	for i, c := range st.Changes {
		in[i] = gitsum.Change{Path: c.Path, Kind: string(c.Kind)}
	}
	_, sums = gitsum.Split(in, checkpoint.NewStepReader(store, areas, st.Before, st.After, gitsum.ReadLimit))
	for _, c := range st.Changes {
		if gitsum.GitDirOf(c.Path) == "" {
			rest = append(rest, c)
		}
	}
	return rest, sums, nil
}
