package policy

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// RuleInfo describes one rule of the effective policy (`policy show`).
type RuleInfo struct {
	ID          string `json:"id"`
	Layer       string `json:"layer"`
	Source      string `json:"source"`
	Decision    string `json:"decision"`
	Matcher     string `json:"match"`
	Description string `json:"description,omitempty"`
	Specificity int    `json:"specificity"`
	// By and At say who added a session rule (the approver and answer)
	// and when; empty for rules from files.
	By string    `json:"by,omitempty"`
	At time.Time `json:"at,omitzero"`
}

// Effective is the merged role plus every rule in every layer, as `agentbox
// policy show` prints it.
type Effective struct {
	Role    RoleInfo   `json:"role"`
	Default string     `json:"default"`
	Files   []string   `json:"files,omitempty"`
	Rules   []RuleInfo `json:"rules"`
	// Formats are the layers in other tools' formats, each decided by its
	// own document (docs/policy.md, "How formats combine").
	Formats []FormatInfo `json:"formats,omitempty"`
}

// FormatInfo is one layer in another tool's format.
type FormatInfo struct {
	Format  string     `json:"format"`
	File    string     `json:"file"`
	Layer   string     `json:"layer"`
	Default string     `json:"default"`
	Order   string     `json:"order"`
	Rules   []RuleInfo `json:"rules"`
}

// Effective returns the engine's merged role and rules, lowest layer first.
func (e *Engine) Effective() Effective {
	out := Effective{Role: e.info, Default: e.info.Default.String(), Files: e.files}
	add := func(r *rule) {
		out.Rules = append(out.Rules, RuleInfo{ID: r.ref.ID, Layer: r.ref.Layer.String(), Source: r.ref.Source,
			Decision: r.dec.String(), Matcher: r.text, Description: r.desc, Specificity: r.spec})
	}
	for _, r := range e.rules {
		add(r)
	}
	for _, r := range e.sess.rules() {
		add(r)
	}
	for _, f := range e.formats {
		out.Formats = append(out.Formats, f.Info())
	}
	return out
}

// String renders the effective policy for humans.
func (ef Effective) String() string {
	var b strings.Builder
	ef.write(&b)
	return b.String()
}

// Digest is the SHA-256 of String's text, computed without building it
// (a launch records it as policy_digest).
func (ef Effective) Digest() [sha256.Size]byte {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 4096)
	ef.write(w)
	_ = w.Flush() // a hash takes every byte
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// textWriter is where write renders: a strings.Builder or a bufio.Writer.
type textWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

// write renders the effective policy into b.
func (ef Effective) write(b textWriter) {
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
		ruleLine(b, ru, ru.Layer+", "+ru.Source)
	}
	for _, f := range ef.Formats {
		fmt.Fprintf(b, "\n%s %s (layer %s; %s; default %s):\n", formatName[f.Format], f.File, f.Layer, f.Order, f.Default)
		for _, ru := range f.Rules {
			ruleLine(b, ru, ru.Source)
		}
	}
}

// ruleLine writes one rule as fmt's "  %-5s %-40s %s  [%s]" and " - %s"
// would, without fmt: a launch digests the whole text (policy_digest).
func ruleLine(b textWriter, ru RuleInfo, where string) {
	b.WriteString("  ")
	padRight(b, ru.Decision, 5)
	b.WriteByte(' ')
	padRight(b, ru.Matcher, 40)
	b.WriteByte(' ')
	b.WriteString(ru.ID)
	b.WriteString("  [")
	b.WriteString(where)
	b.WriteByte(']')
	if ru.Description != "" {
		b.WriteString(" - ")
		b.WriteString(ru.Description)
	}
	b.WriteByte('\n')
}

// padRight writes s padded with spaces to width runes (fmt's %-*s).
func padRight(b textWriter, s string, width int) {
	b.WriteString(s)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b.WriteByte(' ')
	}
}

func acc(a Access) string {
	if a == "" {
		return string(AccessNone)
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
