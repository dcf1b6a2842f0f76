// Package fleet verifies audit records gathered from many machines: the
// lines an OpenTelemetry Collector received from several hosts'
// exporters (audit/export), or several hosts' local logs side by side.
// Each (host, log) is one hash chain, checked with the keys given for
// that host; the report says per host what is whole, what is missing (a
// gap in seq, a run that launched and never exited) and what is forged
// (a broken chain, a bad or missing MAC, a line signed with another
// host's key, two different lines with one seq).
//
// Lines cut off the end of a chain after its last run exited leave no
// gap: CheckHeads sees them against the head the host published
// (head.go), up to when it was published.
package fleet

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// Line is one audit log line and where it came from.
type Line struct {
	Host  string // the host that wrote it (host.name)
	Log   string // the log's path on that host
	Bytes []byte // the line, without its newline
	Where string // file and position, for messages
}

// Keys are the hosts' HMAC keys: each host's chains must be signed with
// one of its own.
type Keys struct {
	byHost map[string][]audit.Key
	owner  map[string]string // key id -> host
}

// Add gives host the key k. One key given to two hosts is refused: a
// host's lines could then be passed off as the other's.
func (ks *Keys) Add(host string, k audit.Key) error {
	if ks.byHost == nil {
		ks.byHost, ks.owner = map[string][]audit.Key{}, map[string]string{}
	}
	if o, ok := ks.owner[k.ID]; ok && o != host {
		return fmt.Errorf("key %s is given to host %s and host %s: each host needs a key of its own", k.ID, o, host)
	}
	ks.owner[k.ID] = host
	ks.byHost[host] = append(ks.byHost[host], k)
	return nil
}

// Finding kinds.
const (
	Missing   = "missing"   // seq gap, or a run without its exit
	Forged    = "forged"    // chain, MAC, key or seq conflict
	Duplicate = "duplicate" // the same line received twice (not a failure)
	Unkeyed   = "unkeyed"   // no key given for the host: MACs not checked (not a failure)
)

// Finding is one thing wrong (or worth saying) in a host's chain.
type Finding struct {
	Kind   string `json:"kind"`
	Host   string `json:"host"`
	Log    string `json:"log"`
	Run    string `json:"run,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	SeqEnd uint64 `json:"seq_end,omitempty"` // a gap's last missing seq
	Detail string `json:"detail"`
	Where  string `json:"where,omitempty"`
}

// Fails reports whether the finding fails verification.
func (f Finding) Fails() bool { return f.Kind == Missing || f.Kind == Forged }

func (f Finding) String() string {
	s := f.Kind + ": host " + f.Host
	if f.Run != "" {
		s += " run " + f.Run
	}
	switch {
	case f.SeqEnd > f.Seq:
		s += fmt.Sprintf(" seq %d-%d", f.Seq, f.SeqEnd)
	case f.Seq > 0:
		s += fmt.Sprintf(" seq %d", f.Seq)
	}
	s += ": " + f.Detail
	if f.Where != "" {
		s += " (" + f.Where + ")"
	}
	return s
}

// Chain is the verdict on one host's log.
type Chain struct {
	Host      string    `json:"host"`
	Log       string    `json:"log"`
	Lines     int       `json:"lines"`
	FirstSeq  uint64    `json:"first_seq"`
	LastSeq   uint64    `json:"last_seq"`
	Runs      int       `json:"runs"`
	MACs      int       `json:"macs_checked"`
	Findings  []Finding `json:"findings,omitempty"`
	Whole     bool      `json:"whole"`
	Duplicate int       `json:"duplicates,omitempty"`
}

// Report is the verdict on every chain, sorted by host and log.
type Report struct {
	Chains []Chain `json:"chains"`
}

// OK reports whether every chain is whole.
func (r Report) OK() bool {
	for _, c := range r.Chains {
		if !c.Whole {
			return false
		}
	}
	return true
}

type entry struct {
	line  Line
	ev    audit.Event
	err   error
	index int
}

type chainKey struct{ host, log string }

// Verify checks lines gathered from any number of hosts with keys.
func Verify(lines []Line, keys Keys) Report {
	groups := map[chainKey][]entry{}
	for i, l := range lines {
		ev, err := audit.ParseLine(l.Bytes)
		k := chainKey{l.Host, l.Log}
		groups[k] = append(groups[k], entry{line: l, ev: ev, err: err, index: i})
	}
	var rep Report
	for k, es := range groups {
		rep.Chains = append(rep.Chains, verifyChain(k, es, keys))
	}
	sort.Slice(rep.Chains, func(i, j int) bool {
		a, b := rep.Chains[i], rep.Chains[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Log < b.Log
	})
	return rep
}

func verifyChain(k chainKey, es []entry, keys Keys) Chain {
	c := Chain{Host: k.host, Log: k.log}
	add := func(f Finding) {
		f.Host, f.Log = k.host, k.log
		c.Findings = append(c.Findings, f)
	}
	var good []entry
	for _, e := range es {
		if e.err != nil {
			add(Finding{Kind: Forged, Detail: "not an audit event: " + e.err.Error(), Where: e.line.Where})
			continue
		}
		good = append(good, e)
	}
	sort.SliceStable(good, func(i, j int) bool { return good[i].ev.Seq < good[j].ev.Seq })
	hostKeys := keys.byHost[k.host]
	if len(hostKeys) == 0 {
		add(Finding{Kind: Unkeyed, Detail: "no key given for this host: MACs not checked, chain only (--host-key HOST=FILE)"})
	}
	type runState struct {
		launched, exited bool
		lastSeq          uint64
	}
	runs := map[string]*runState{}
	var runOrder []string
	var last *entry
	var lastHash string
	for i := range good {
		e := &good[i]
		if last != nil && e.ev.Seq == last.ev.Seq {
			if bytes.Equal(e.line.Bytes, last.line.Bytes) {
				c.Duplicate++
				continue
			}
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: "two different lines carry this seq (one of them was forged or replayed from elsewhere)", Where: e.line.Where + "; " + last.line.Where})
			continue
		}
		c.Lines++
		// The MAC: made with one of this host's keys.
		switch owner, known := keys.owner[e.ev.Kid]; {
		case len(hostKeys) == 0:
		case e.ev.Mac == "":
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: "no MAC although the host has a key", Where: e.line.Where})
		case known && owner != k.host:
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: fmt.Sprintf("signed with host %s's key %s: another host's event passed off as this host's", owner, e.ev.Kid), Where: e.line.Where})
		case !known:
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: fmt.Sprintf("signed with key %s, which is none of this host's", e.ev.Kid), Where: e.line.Where})
		default:
			ok := false
			for _, hk := range hostKeys {
				if hk.ID == e.ev.Kid && hk.CheckLine(e.line.Bytes) {
					ok = true
				}
			}
			if !ok {
				add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: fmt.Sprintf("MAC does not match (key %s): the line was changed", e.ev.Kid), Where: e.line.Where})
			} else {
				c.MACs++
			}
		}
		// The chain.
		switch {
		case last == nil && e.ev.Seq != 1 && e.ev.Event != audit.EventRotate:
			add(Finding{Kind: Missing, Seq: 1, SeqEnd: e.ev.Seq - 1, Detail: fmt.Sprintf("the chain starts at seq %d: the events before it are missing", e.ev.Seq)})
		case last == nil:
			c.FirstSeq = e.ev.Seq
		case e.ev.Seq > last.ev.Seq+1:
			add(Finding{Kind: Missing, Seq: last.ev.Seq + 1, SeqEnd: e.ev.Seq - 1, Detail: fmt.Sprintf("not received, between run %s seq %d and run %s seq %d", orNone(last.ev.Run), last.ev.Seq, orNone(e.ev.Run), e.ev.Seq)})
		case e.ev.Prev != lastHash:
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: fmt.Sprintf("prev hash does not match seq %d: a line was changed or replaced", last.ev.Seq), Where: e.line.Where})
		}
		if c.FirstSeq == 0 {
			c.FirstSeq = e.ev.Seq
		}
		if e.ev.Event == audit.EventViolation && e.ev.Detail[audit.DetailTamper] != "" {
			add(Finding{Kind: Forged, Run: e.ev.Run, Seq: e.ev.Seq, Detail: "the host's writer found its log tampered with: " + e.ev.Detail[audit.DetailTamper], Where: e.line.Where})
		}
		if r := e.ev.Run; r != "" {
			rs := runs[r]
			if rs == nil {
				rs = &runState{}
				runs[r] = rs
				runOrder = append(runOrder, r)
			}
			rs.lastSeq = e.ev.Seq
			switch e.ev.Event {
			case audit.EventLaunch:
				rs.launched = true
			case audit.EventExit:
				rs.exited = true
			}
		}
		last, lastHash = e, audit.LineHash(e.line.Bytes)
		c.LastSeq = e.ev.Seq
	}
	c.Runs = len(runs)
	for _, r := range runOrder {
		if rs := runs[r]; rs.launched && !rs.exited {
			add(Finding{Kind: Missing, Run: r, Seq: rs.lastSeq, Detail: "the run launched but its exit event is missing (its tail was dropped, or it is still running)"})
		}
	}
	c.Whole = true
	for _, f := range c.Findings {
		if f.Fails() {
			c.Whole = false
		}
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// ParseHostValue parses the HOST=VALUE form of --host-key and --host-log.
func ParseHostValue(s string) (host, value string, err error) {
	host, value, ok := strings.Cut(s, "=")
	if !ok || host == "" || value == "" {
		return "", "", fmt.Errorf("%q: want HOST=FILE", s)
	}
	return host, value, nil
}
