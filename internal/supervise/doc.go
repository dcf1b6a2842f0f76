// Package supervise owns the exec supervisor: it stops every program
// start in a sandbox, through seccomp user notifications (notify mode) or
// ptrace of every process (trace-all), hands it as an ExecEvent to the
// function it is given and applies the Verdict that function returns.
// It knows no policy and no approver: Run(ctx, Options) takes the
// decision as a function (internal/judge gives it one).
package supervise
