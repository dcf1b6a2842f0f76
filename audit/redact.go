package audit

import (
	"sort"
	"strings"

	"github.com/agentbox/agentbox/internal/redact"
)

// redactEvent removes secrets (API keys, tokens, passwords in argv, shell
// lines, environment values and URLs) from what an event records, before
// it is chained and written: the log is read by reviewers and kept, so a
// secret the agent put on a command line must not land in it. What was
// replaced is marked "[REDACTED:<rule>]" in place, and Detail "redacted"
// lists the rules.
func redactEvent(e *Event) {
	var rules []string
	add := func(rs []string) { rules = append(rules, rs...) }
	var rs []string
	e.Action, rs = redact.Text(e.Action)
	add(rs)
	e.Reason, rs = redact.Text(e.Reason)
	add(rs)
	if len(e.Argv) > 0 {
		e.Argv, rs = redact.Argv(e.Argv)
		add(rs)
	}
	if len(e.Detail) > 0 {
		var d map[string]string
		for k, v := range e.Detail {
			nv, rs := redact.Text(v)
			if len(rs) == 0 {
				continue
			}
			if d == nil {
				d = make(map[string]string, len(e.Detail))
				for k2, v2 := range e.Detail {
					d[k2] = v2
				}
			}
			d[k] = nv
			add(rs)
		}
		if d != nil {
			e.Detail = d
		}
	}
	if len(rules) == 0 {
		return
	}
	sort.Strings(rules)
	uniq := rules[:0]
	for i, r := range rules {
		if i == 0 || r != rules[i-1] {
			uniq = append(uniq, r)
		}
	}
	d := make(map[string]string, len(e.Detail)+1)
	for k, v := range e.Detail {
		d[k] = v
	}
	d["redacted"] = strings.Join(uniq, ",")
	e.Detail = d
}
