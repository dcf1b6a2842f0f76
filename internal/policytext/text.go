// Package policytext renders the policy engine's data for humans: the
// effective policy (`agentbox policy show`, and its digest every launch
// records as policy_digest) and an explanation (`agentbox explain`). The
// engine builds the data (policy.Effective, policy.Explanation); this
// package owns only their text. It imports the decision core (policy)
// for those types, never the loader's internals, a format or lint
// (arch_test.go).
package policytext

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
)

// formatNames are how the text names each foreign format.
var formatNames = map[string]string{
	"chorus": "Chorus profile", "codelia": "Codelia permissions", "forge": "Forge rules",
	"claude": "Claude Code permissions", "codex": "Codex execpolicy rules",
}

// Effective renders the effective policy for humans (`agentbox policy
// show`).
func Effective(ef policy.Effective) string {
	b := textBuf{buf: make([]byte, 0, textSize(ef))}
	write(&b, ef)
	return string(b.buf)
}

// Digest is the SHA-256 of Effective's text (a launch records it as
// policy_digest): the text passes through a small buffer into the hash,
// never whole in memory.
func Digest(ef policy.Effective) [sha256.Size]byte {
	d := sha256.New()
	b := textBuf{buf: make([]byte, 0, digestChunk+1024), hash: d}
	write(&b, ef)
	d.Write(b.buf)
	var sum [sha256.Size]byte
	d.Sum(sum[:0])
	return sum
}

// digestChunk is how much of the text Digest gathers before hashing it.
const digestChunk = 4096

// textSize is about the size of ef's text, so that Effective rarely
// grows its buffer: the rules are most of it.
func textSize(ef policy.Effective) int {
	n := 2048
	add := func(rs []policy.RuleInfo) {
		for _, ru := range rs {
			n += 64 + len(ru.Matcher) + len(ru.ID) + len(ru.Layer) + len(ru.Source) + len(ru.Description)
		}
	}
	add(ef.Rules)
	for _, f := range ef.Formats {
		n += 256
		add(f.Rules)
	}
	return n
}

// textBuf is where write renders: appended to, then made a string whole
// (Effective), or handed to hash every digestChunk bytes (Digest). A
// concrete type, not bufio behind an interface: a launch digests the
// text, and fmt gets it through an itab made at build time.
type textBuf struct {
	buf  []byte
	hash hash.Hash // nil: keep the whole text
}

// Write implements io.Writer, for fmt.
func (b *textBuf) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// WriteString appends s.
func (b *textBuf) WriteString(s string) {
	b.buf = append(b.buf, s...)
}

// WriteByte appends c (io.ByteWriter's signature; never fails).
func (b *textBuf) WriteByte(c byte) error {
	b.buf = append(b.buf, c)
	return nil
}

// spill hands what is gathered to the hash once it is digestChunk long.
func (b *textBuf) spill() {
	if b.hash != nil && len(b.buf) >= digestChunk {
		b.hash.Write(b.buf)
		b.buf = b.buf[:0]
	}
}

// write renders the effective policy into b.
func write(b *textBuf, ef policy.Effective) {
	r := ef.Role
	fmt.Fprintf(b, "role %s", r.Name)
	if r.Extends != "" {
		fmt.Fprintf(b, " (extends %s)", r.Extends)
	}
	fmt.Fprintf(b, "\n  %s\n", r.Description)
	fmt.Fprintf(b, "default: %s (when no rule matches)\n", ef.Default)
	if len(ef.Files) > 0 {
		fmt.Fprintf(b, "policy files: %s\n", strings.Join(ef.Files, ", "))
	}
	fs := r.FS
	fmt.Fprintf(b, "\nfilesystem (Landlock):\n  context %s, target %s, feedback %s, own agent %s, other agents %s\n",
		acc(fs.Context), acc(fs.Target), acc(fs.Feedback), acc(fs.OwnAgent), acc(fs.OtherAgents))
	if len(fs.ReadOnly) > 0 {
		fmt.Fprintf(b, "  read-only carve-outs: %s\n", strings.Join(fs.ReadOnly, ", "))
	}
	if len(fs.ExtraRead) > 0 {
		fmt.Fprintf(b, "  extra read: %s\n", strings.Join(fs.ExtraRead, ", "))
	}
	if len(fs.ExtraExec) > 0 {
		fmt.Fprintf(b, "  extra read+execute: %s\n", strings.Join(fs.ExtraExec, ", "))
	}
	if len(fs.ExtraWrite) > 0 {
		fmt.Fprintf(b, "  extra write: %s\n", strings.Join(fs.ExtraWrite, ", "))
	}
	b.WriteString("network: ")
	nw := r.Network
	switch {
	case nw.Proxy:
		def := "deny"
		if nw.Default != nil {
			def = nw.Default.String()
		}
		fmt.Fprintf(b, "proxy (own network namespace, connections decided by host)\n")
		fmt.Fprintf(b, "  allow hosts: %s\n  ask hosts:   %s\n  deny hosts:  %s\n  other hosts: %s\n",
			orNone(nw.Allow), orNone(nw.Ask), orNone(nw.Deny), def)
		if nw.RatePerMinute > 0 {
			fmt.Fprintf(b, "  rate limit:  %d new connections per minute per host\n", nw.RatePerMinute)
		}
	case len(nw.TCPConnect) == 0 && len(nw.TCPBind) == 0:
		b.WriteString("none\n")
	default:
		fmt.Fprintf(b, "tcp connect %v, tcp bind %v (coarse: every host on those ports)\n", nw.TCPConnect, nw.TCPBind)
	}
	l := r.Limits
	fmt.Fprintf(b, "limits: memory %s, cpus %s, pids %s, max file size %s, open files %s, timeout %s, approval timeout %s\n",
		size(l.MemoryBytes), num(l.CPUs), numi(l.Pids), size(l.MaxFileSize), numi(int64(l.NoFile)), dur(l.Timeout.String(), l.Timeout == 0), dur(l.ApprovalWait.String(), l.ApprovalWait == 0))
	if len(r.InjectEnv) > 0 {
		fmt.Fprintf(b, "loader/runtime variables allowed for programs that are not sensitive: %s\n", strings.Join(r.InjectEnv, " "))
	}
	if len(r.Env) > 0 {
		fmt.Fprintf(b, "env passed through: %s\n", strings.Join(r.Env, " "))
	}
	fmt.Fprintf(b, "git: max commits %s, commit message required %v\n", numi(int64(r.Git.MaxCommits)), r.Git.CommitMessageRequired)
	d := r.Deletions
	if len(d.Forbidden)+len(d.RequireApproval)+len(d.AutoApprove) > 0 {
		fmt.Fprintf(b, "deletions: forbidden [%s], need approval [%s], auto-approved [%s]\n",
			strings.Join(d.Forbidden, " "), strings.Join(d.RequireApproval, " "), strings.Join(d.AutoApprove, " "))
	}
	fmt.Fprintf(b, "\nrules (%d; deny always wins, else the most specific allow/ask):\n", len(ef.Rules))
	for _, ru := range ef.Rules {
		ruleLine(b, ru, true)
		b.spill()
	}
	for _, f := range ef.Formats {
		fmt.Fprintf(b, "\n%s %s (layer %s; %s; default %s):\n", formatNames[f.Format], f.File, f.Layer, f.Order, f.Default)
		for _, ru := range f.Rules {
			ruleLine(b, ru, false)
			b.spill()
		}
	}
}

// ruleLine writes one rule as fmt's "  %-5s %-40s %s  [%s]" and " - %s"
// would, without fmt: a launch digests the whole text (policy_digest).
// The bracket holds the rule's "layer, source" (withLayer), or its source.
func ruleLine(b *textBuf, ru policy.RuleInfo, withLayer bool) {
	b.WriteString("  ")
	padRight(b, ru.Decision, 5)
	b.WriteByte(' ')
	padRight(b, ru.Matcher, 40)
	b.WriteByte(' ')
	b.WriteString(ru.ID)
	b.WriteString("  [")
	if withLayer {
		b.WriteString(ru.Layer)
		b.WriteString(", ")
	}
	b.WriteString(ru.Source)
	b.WriteByte(']')
	if ru.Description != "" {
		b.WriteString(" - ")
		b.WriteString(ru.Description)
	}
	b.WriteByte('\n')
}

// spaces pads padRight's columns.
const spaces = "                                        "

// padRight writes s padded with spaces to width runes (fmt's %-*s).
func padRight(b *textBuf, s string, width int) {
	b.WriteString(s)
	for n := utf8.RuneCountInString(s); n < width; {
		k := min(width-n, len(spaces))
		b.WriteString(spaces[:k])
		n += k
	}
}

func acc(a policy.Access) string {
	if a == "" {
		return string(policy.AccessNone)
	}
	return string(a)
}

func size(n int64) string {
	switch {
	case n == 0:
		return "unlimited"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	}
	return fmt.Sprintf("%d", n)
}

func num(f float64) string {
	if f == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g", f)
}

func numi(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d", n)
}

func dur(s string, zero bool) string {
	if zero {
		return "none"
	}
	return s
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, " ")
}

// Explanation renders an explanation for humans (`agentbox explain`):
// the decision, then for each part of the input the rules that matched
// (winner first) and why the winner won.
func Explanation(ex policy.Explanation) string {
	var b strings.Builder
	r := ex.Result
	fmt.Fprintf(&b, "%s: %s\n", strings.ToUpper(r.Decision.String()), r.Action)
	if r.Rule != nil {
		fmt.Fprintf(&b, "  decided by rule %s (layer %s, %s)\n", r.Rule.ID, r.Rule.Layer, r.Rule.Source)
	}
	fmt.Fprintf(&b, "  reason: %s\n", r.Reason)
	if r.Floor != "" {
		fmt.Fprintf(&b, "  raised by the command parser: %s\n", r.Floor)
	}
	for i, se := range ex.Segments {
		sr := se.Result
		fmt.Fprintf(&b, "\npart %d: %s -> %s\n", i+1, sr.Action, sr.Decision)
		if se.Text != "" {
			fmt.Fprintf(&b, "  source: %s\n", se.Text)
		}
		if len(se.Matches) == 0 {
			fmt.Fprintf(&b, "  %s\n", sr.Reason)
		}
		for j, m := range se.Matches {
			mark := "   "
			if sr.Rule != nil && m.Ref.ID == sr.Rule.ID && m.Ref.Source == sr.Rule.Source && j == 0 {
				mark = " * "
			}
			spec := strconv.Itoa(m.Specificity)
			if m.Exact() {
				spec = "exact"
			}
			fmt.Fprintf(&b, " %s%-5s %s  [%s]  specificity %s, layer %s, %s\n", mark, m.Decision, m.Ref.ID, m.Matcher, spec, m.Ref.Layer, m.Ref.Source)
		}
		if se.Why != "" {
			fmt.Fprintf(&b, "  why: %s\n", se.Why)
		}
		if sr.Floor != "" {
			fmt.Fprintf(&b, "  floor: %s\n", sr.Floor)
		}
	}
	return b.String()
}
