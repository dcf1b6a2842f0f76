package agentbox

import "github.com/agentbox/agentbox/internal/plan"

// OptionError is a bad option value (or command), found before anything
// started.
type OptionError = plan.OptionError

// ExposedError refuses a run in which the sandbox could reach something
// that judges it: a policy file, the audit log, the approval socket or the
// run registry inside an area the sandbox can write (or, for the audit
// log, read).
type ExposedError = plan.ExposedError
