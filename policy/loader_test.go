package policy_test

import (
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/policy/load"
)

// The internal tests load policy files through load (export_test.go).
func init() {
	policy.LoaderHooks.Read = load.Read
	policy.LoaderHooks.Parse = load.Parse
	policy.LoaderHooks.CheckPerms = load.CheckFilePerms
}
