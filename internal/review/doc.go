// Package review owns what is done with a finished run's record, by its
// run id, after the run: what it changed (per command from its
// checkpoints, or its review layer), diffs of those changes, applying or
// discarding a review layer, undoing from checkpoints, and finding runs
// (their records, the latest one, a run by id from any directory). It is
// what `agentbox changes`, `diff`, `apply`, `discard` and `undo` call;
// the library's Run.Changes, Run.Apply, Run.Discard and Run.Undo call it
// for their own run. Everything shown here is the agent's and comes out
// with control characters escaped (EscapeControls).
//
// It reads the stores agentbox keeps out of every sandbox's reach
// (internal/checkpoint, internal/layer) and writes apply and discard
// events to the run's audit log; it imports no launcher, judge or plan.
package review
