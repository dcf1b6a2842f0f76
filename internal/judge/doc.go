// Package judge owns every decision of a run: a program start (its
// identity, git's configuration, aliases and environment understood, the
// policy engine, commit and deletion rules, an ask, the audit event), a
// connection through the egress proxy (DecideHost, AskHost) and an
// agent's tool call (DecideTool). It is the one place that puts a request
// to an approver (ask.go), which TestOneJudgeOnePlan in arch_test.go
// holds. The mechanism (internal/sandbox, internal/supervise,
// internal/egress) calls it through plain functions and never imports it.
package judge
