package plan

// Every agentbox command loads policy through this package (Load), so it
// links the foreign policy formats' readers (load.RegisterFormat) for
// run, check, explain, hook, replay and policy validate.
import _ "github.com/agentbox/agentbox/policy/formats"
