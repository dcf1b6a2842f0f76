package remember

// A remembered rule is checked against a fresh load of the file it goes
// into, which must read every format as a run does: the foreign formats'
// readers are linked here too, for programs that use this package
// without internal/plan.
import _ "github.com/agentbox/agentbox/policy/formats"
