package agentbox_test

import (
	"context"
	"fmt"
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
