package approval_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/approval"
)

// ExampleFunc answers a run's asks in Go (agentbox.WithApprover): pushes
// to the agent's own branches once, everything else no.
func ExampleFunc() {
	var a approval.Approver = approval.Func(func(ctx context.Context, req approval.Request) (approval.Response, error) {
		if strings.HasPrefix(req.Action, "git push origin agent/") {
			return approval.Response{Answer: approval.AllowOnce, Approver: "orchestrator"}, nil
		}
		return approval.Response{Answer: approval.DenyOnce, Approver: "orchestrator"}, nil
	})
	for _, action := range []string{"git push origin agent/fix-1", "git push origin main"} {
		resp, err := a.Approve(context.Background(), approval.Request{Agent: "a1", Action: action, Rule: "developer/git.push"})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %v (allowed %v)\n", action, resp.Answer, resp.Answer.Allowed())
	}
	// Output:
	// git push origin agent/fix-1: allow (allowed true)
	// git push origin main: deny (allowed false)
}
