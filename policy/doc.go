// Package policy is agentbox's decision engine: it turns what a sandboxed
// program wants to do — a program start (argv), a shell line, an action
// string of a tool call, a connection to a host — into allow, ask or deny,
// and says which rule decided and why.
//
// The built-in roles (roles.yaml, compiled into roles_gen.go) and the
// policy layers a loader read — user, project, --policy files, and the
// permission files of other agent tools in their own formats: Claude
// Code, Codex, Chorus, Codelia, Forge — compile into an Engine
// (Layers.Engine; package policy/load reads the files and describes each
// as a Document; this package reads no file and parses no YAML, and
// imports no loader). An Engine is immutable: WithGrants returns a new
// one holding a run's own grants (--allow-host, --exec, --rw, an agent
// profile's install and API hosts), and the answers given during a run live in its Session, the one
// part that changes. Decide(Query) and Explain(Query) are the only ways
// to ask; they do no I/O (program locations come from the caller's
// ExecContext) and are safe for concurrent use.
//
// What a command line or argv means (shell parsing, wrappers, per-tool
// handlers, git) is internal/command's job; the subpackage remember writes
// an approver's standing answers into a policy file. The other tools'
// formats are read and decided by packages of their own
// (internal/policyfmt/...) that register a FormatReader (those whose
// rules have agentbox's shape describe them as RuleSpecs this package
// compiles into a RuleSet); lint and the text of show and explain are
// internal/policylint's and internal/policytext's; this package
// imports none of them, nor the loader, nor anything of the module but
// internal/command, internal/programs and internal/jsonstr
// (arch_test.go). The language itself is
// documented in docs/policy.md.
package policy
