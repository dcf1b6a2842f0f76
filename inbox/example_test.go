package inbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/inbox"
)

// Example starts an inbox, attaches a run's approver to it as
// `agentbox run --approve inbox` does, and answers the run's ask as a
// reviewer would on the page (Server.Answer is what its API calls).
func Example() {
	dir, _ := os.MkdirTemp("", "inbox-example")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := inbox.New(inbox.Config{Socket: filepath.Join(dir, "inbox.sock"), StateDir: filepath.Join(dir, "state"), Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	go srv.Serve(context.Background())

	// the run's side
	run, err := approval.New("inbox:"+srv.Socket(), approval.Options{Logger: quiet,
		Inbox: approval.InboxInfo{Attach: approval.InboxAttach{Run: "r1", Agent: "a1", Role: "developer"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer run.(io.Closer).Close()
	answered := make(chan approval.Response, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resp, _ := run.Approve(ctx, approval.Request{Argv: []string{"git", "push"}, Action: "git push", Rule: "developer/git.push"})
		answered <- resp
	}()

	// the reviewer's side: the ask appears, and is answered
	deadline := time.Now().Add(time.Minute)
	for len(srv.Asks()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(srv.Asks()) == 0 {
		fmt.Println("no ask reached the inbox")
		return
	}
	ask := srv.Asks()[0]
	fmt.Println("pending:", ask.Run, ask.Action)
	if code, msg := srv.Answer(ask.ID, "allow", "", "alice"); code != 200 {
		fmt.Println(code, msg)
		return
	}
	fmt.Println("run got:", (<-answered).Answer)
	// Output:
	// pending: r1 git push
	// run got: allow
}
