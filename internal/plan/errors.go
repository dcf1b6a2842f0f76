package plan

import "fmt"

// OptionError is a bad option value (or command), found before anything
// started.
type OptionError struct {
	Option string // the option (the CLI flag without dashes), e.g. "approve"
	Value  string // the value given, if any
	Err    error
}

func (e *OptionError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Option, e.Err)
	}
	return fmt.Sprintf("%s %q: %v", e.Option, e.Value, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// ExposedError refuses a run in which the sandbox could reach something
// that judges it: a policy file, the audit log, the approval socket or the
// run registry inside an area the sandbox can write (or, for the audit
// log, read).
type ExposedError struct {
	What   string // "policy file", "audit log", "approval socket", "run registry"
	Path   string
	Area   string // the granted path that covers it
	Access string // "write" or "read"
}

func (e *ExposedError) Error() string {
	return fmt.Sprintf("%s %s: inside %s, which the sandbox can %s; move it out of the workspace areas", e.What, e.Path, e.Area, e.Access)
}
