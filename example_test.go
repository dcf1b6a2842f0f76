package agentbox_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox"
)

// Example_run runs a command under the developer role in a fresh
// workspace, with the audit log kept outside it.
func Example_run() {
	dir, _ := os.MkdirTemp("", "agentbox-example")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if _, err := agentbox.Init(ws); err != nil {
		fmt.Println(err)
		return
	}
	r, err := agentbox.New(ws, "developer", []string{"sh", "-c", "echo hello from $(basename $PWD)"},
		agentbox.WithAudit(filepath.Join(dir, "audit.jsonl")),
		agentbox.WithoutUserPolicy(),
		agentbox.WithRegistry(filepath.Join(dir, "runs")))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	res, err := r.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit", res.ExitCode)
	// Output:
	// hello from target
	// exit 0
}

// Example_undo looks at what a run changed in the workspace and takes it
// back: the checkpoints taken before each of its commands make the run
// undoable once it has ended (Run.Changes, Run.Undo; a review run's
// layer is applied or discarded instead, Run.Apply, Run.Discard).
func Example_undo() {
	dir, _ := os.MkdirTemp("", "agentbox-example")
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if _, err := agentbox.Init(ws); err != nil {
		fmt.Println(err)
		return
	}
	r, err := agentbox.New(ws, "developer", []string{"sh", "-c", "echo draft > notes.txt"},
		agentbox.WithAudit(filepath.Join(dir, "audit.jsonl")),
		agentbox.WithoutUserPolicy(),
		agentbox.WithRegistry(filepath.Join(dir, "runs")),
		agentbox.WithCheckpoints(filepath.Join(dir, "checkpoints"), true))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := r.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	changes, err := r.Changes()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range changes {
		fmt.Println(c.Kind, c.Path)
	}
	if _, err := r.Undo(agentbox.UndoOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	_, err = os.Stat(filepath.Join(ws, "target", "notes.txt"))
	fmt.Println("notes.txt after undo:", errors.Is(err, fs.ErrNotExist))
	// Output:
	// added target/notes.txt
	// notes.txt after undo: true
}
