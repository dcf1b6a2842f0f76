package policy

import "time"

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
	sess := e.sess.rules()
	if n := len(e.rules) + len(sess); n > 0 {
		out.Rules = make([]RuleInfo, 0, n) // nil when none, as JSON shows it
	}
	add := func(r *rule) {
		out.Rules = append(out.Rules, RuleInfo{ID: r.ref.ID, Layer: r.ref.Layer.String(), Source: r.ref.Source,
			Decision: r.dec.String(), Matcher: r.text, Description: r.desc, Specificity: r.spec})
	}
	for _, r := range e.rules {
		add(r)
	}
	for _, r := range sess {
		add(r)
	}
	for _, f := range e.formats {
		out.Formats = append(out.Formats, f.Info())
	}
	return out
}
