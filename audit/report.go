package audit

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/shellquote"
)

// Report is the summary of a log a security reviewer reads first: what was
// decided how often, what was denied most and by which rule, which asks were
// answered by whom, and every limit hit and violation.
type Report struct {
	File       string         `json:"file,omitempty"`      // where the log was read from (set by the caller)
	Integrity  string         `json:"integrity,omitempty"` // outcome of Verify (set by the caller)
	Since      time.Time      `json:"since,omitzero"`      // the filter's lower bound, if any
	Events     int            `json:"events"`
	Malformed  []string       `json:"malformed,omitempty"` // "line N: why", one per bad line
	First      time.Time      `json:"first,omitzero"`
	Last       time.Time      `json:"last,omitzero"`
	Runs       int            `json:"runs"`
	ByDecision map[string]int `json:"by_decision"`
	ByEvent    map[string]int `json:"by_event"`
	ByAgent    []AgentCount   `json:"by_agent"`
	TopDenied  []DeniedAction `json:"top_denied"`
	Asks       []Event        `json:"asks"`
	Limits     []Event        `json:"limits"`
	Violations []Event        `json:"violations"`
	// Omitted counts the asks, limits and violations beyond MaxListed
	// each: counted, not listed.
	Omitted struct {
		Asks       int `json:"asks,omitempty"`
		Limits     int `json:"limits,omitempty"`
		Violations int `json:"violations,omitempty"`
	} `json:"omitted,omitzero"`
	// TopRules are the rules that refused most (rule id -> refusals).
	TopRules []RuleCount `json:"top_rules"`
	// Approvers counts answered asks per approver.
	Approvers map[string]int `json:"approvers"`
	// Hosts is each agent's use of each network host through the egress
	// proxy (tool:net: actions), by agent then host.
	Hosts []HostUse `json:"hosts"`
	// RunList describes each run (at most MaxRuns, most recent last).
	RunList []RunSummary `json:"run_list"`
	// Timeline counts decisions per minute: unix minute -> allowed, asked,
	// refused (what a plot of decisions over time needs).
	Timeline map[int64]*[3]int `json:"-"`
}

// HostUse is one agent's connections to one host:port through the egress
// proxy: decisions, and the bytes of the allowed ones when they closed.
type HostUse struct {
	Agent     string `json:"agent"`
	Host      string `json:"host"` // host:port
	Allowed   int    `json:"allowed"`
	Refused   int    `json:"refused"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

// RuleCount is one rule and how often it refused.
type RuleCount struct {
	Rule  string `json:"rule"`
	Count int    `json:"count"`
}

// RunSummary is one run in the report.
type RunSummary struct {
	Run      string    `json:"run"`
	Agent    string    `json:"agent"`
	Role     string    `json:"role"`
	Start    time.Time `json:"start"`
	Events   int       `json:"events"`
	Refusals int       `json:"refusals"`
	Exit     string    `json:"exit,omitempty"`
	// Command and Workspace are what the run's launch event names: the
	// command the sandbox started and the workspace it ran in.
	Command   string `json:"command,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// MaxRuns bounds Report.RunList.
const MaxRuns = 500

// AgentCount is one agent's share of the log.
type AgentCount struct {
	Agent     string         `json:"agent"`
	Events    int            `json:"events"`
	Decisions map[string]int `json:"decisions"`
}

// DeniedAction is one denied action with how often and by which rules.
type DeniedAction struct {
	Action string   `json:"action"`
	Count  int      `json:"count"`
	Rules  []string `json:"rules"`
}

// MaxTopDenied bounds Report.TopDenied.
const MaxTopDenied = 15

// Summarize reads a log and builds its Report from the events filter
// selects. Malformed lines do not stop it; each is listed in Report.Malformed.
func Summarize(r io.Reader, filter Filter) (*Report, error) {
	s := newSummary(filter)
	err := Scan(r, filter, func(e Event) error {
		s.add(&e)
		return nil
	}, func(le *LineError) error {
		s.rep.Malformed = append(s.rep.Malformed, le.Error())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.finish(), nil
}

// MaxListed bounds the events kept whole in Report.Asks, Limits and
// Violations (the counts cover every event): a report's memory does not
// grow with the log.
const MaxListed = 1000

// summary accumulates a Report.
type summary struct {
	rep      *Report
	filter   Filter
	rules    map[string]int
	runList  map[string]*RunSummary
	runOrder []string
	agents   map[string]*AgentCount
	hosts    map[[2]string]*HostUse
	denied   map[string]*DeniedAction
	runs     map[string]bool
	intern   map[string]string
	scratch  Event             // light's event, reused
	detail   map[string]string // light's detail, reused
	// the previous event's run and minute: consecutive events share them
	lastRun    string
	lastRS     *RunSummary
	lastMin    int64
	lastMinute *[3]int
	lastIn     [9]string // light's last value per field
}

func newSummary(filter Filter) *summary {
	return &summary{
		rep: &Report{ByDecision: map[string]int{}, ByEvent: map[string]int{}, Since: filter.Since,
			Approvers: map[string]int{}, Timeline: map[int64]*[3]int{}},
		filter: filter, rules: map[string]int{}, runList: map[string]*RunSummary{}, agents: map[string]*AgentCount{},
		hosts: map[[2]string]*HostUse{}, denied: map[string]*DeniedAction{}, runs: map[string]bool{}, intern: map[string]string{},
		detail: map[string]string{},
	}
}

// add counts one event.
func (s *summary) add(e *Event) {
	s.rep.Events++
	if s.rep.First.IsZero() || e.Time.Before(s.rep.First) {
		s.rep.First = e.Time
	}
	if e.Time.After(s.rep.Last) {
		s.rep.Last = e.Time
	}
	if e.Run != "" {
		var rs *RunSummary
		if e.Run == s.lastRun {
			rs = s.lastRS // runs come in stretches: skip the map lookups
		} else {
			s.runs[e.Run] = true
			rs = s.runList[e.Run]
		}
		if rs == nil && len(s.runList) < MaxRuns && s.runList[e.Run] == nil {
			rs = &RunSummary{Run: e.Run, Agent: e.Agent, Role: e.Role, Start: e.Time}
			s.runList[e.Run] = rs
			s.runOrder = append(s.runOrder, e.Run)
		}
		s.lastRun, s.lastRS = e.Run, rs
		if rs != nil {
			rs.Events++
			if Refused(e.Decision) {
				rs.Refusals++
			}
			if e.Event == EventExit && e.Exit != nil {
				rs.Exit = fmt.Sprint(*e.Exit)
			}
			if e.Event == EventLaunch && rs.Command == "" {
				rs.Command = Printable(shellquote.Join(e.Argv))
				if len(rs.Command) > 200 {
					rs.Command = rs.Command[:200] + "..."
				}
				rs.Workspace = Printable(e.Detail["workspace"])
			}
		}
	}
	if e.Decision != "" {
		m := e.Time.Unix() / 60
		c := s.lastMinute
		if c == nil || m != s.lastMin {
			c = s.rep.Timeline[m]
			if c == nil {
				c = &[3]int{}
				s.rep.Timeline[m] = c
			}
			s.lastMin, s.lastMinute = m, c
		}
		switch {
		case Refused(e.Decision):
			c[2]++
		case strings.HasPrefix(e.Decision, "ask"):
			c[1]++
		default:
			c[0]++
		}
		if Refused(e.Decision) && e.Rule != "" {
			s.rules[e.Rule]++
		}
		if e.Approver != "" {
			s.rep.Approvers[e.Approver]++
		}
	}
	if host, ok := strings.CutPrefix(e.Action, "tool:net:"); ok && e.Event == EventNet {
		k := [2]string{e.Agent, host}
		h := s.hosts[k]
		if h == nil {
			h = &HostUse{Agent: e.Agent, Host: host}
			s.hosts[k] = h
		}
		switch {
		case e.Decision == "":
			up, _ := strconv.ParseInt(e.Detail["bytes_up"], 10, 64)
			down, _ := strconv.ParseInt(e.Detail["bytes_down"], 10, 64)
			h.BytesUp += up
			h.BytesDown += down
		case Refused(e.Decision):
			h.Refused++
		default:
			h.Allowed++
		}
	}
	s.rep.ByEvent[e.Event]++
	if e.Decision != "" {
		s.rep.ByDecision[e.Decision]++
	}
	a := s.agents[e.Agent]
	if a == nil {
		a = &AgentCount{Agent: e.Agent, Decisions: map[string]int{}}
		s.agents[e.Agent] = a
	}
	a.Events++
	if e.Decision != "" {
		a.Decisions[e.Decision]++
	}
	if Refused(e.Decision) {
		key := e.Action
		if key == "" {
			key = strings.Join(e.Argv, " ")
		}
		d := s.denied[key]
		if d == nil {
			d = &DeniedAction{Action: key}
			s.denied[key] = d
		}
		d.Count++
		rule := e.Rule
		if rule == "" {
			rule = e.Decision
		}
		if !slices.Contains(d.Rules, rule) {
			d.Rules = append(d.Rules, rule)
		}
	}
	if strings.HasPrefix(e.Decision, "ask") || e.Event == EventAsk {
		keep(&s.rep.Asks, &s.rep.Omitted.Asks, e)
	}
	switch e.Event {
	case EventLimit:
		keep(&s.rep.Limits, &s.rep.Omitted.Limits, e)
	case EventViolation:
		keep(&s.rep.Violations, &s.rep.Omitted.Violations, e)
	}
}

// keep lists e whole, up to MaxListed; beyond that it is only counted.
func keep(list *[]Event, omitted *int, e *Event) {
	if len(*list) < MaxListed {
		*list = append(*list, *e)
	} else {
		*omitted++
	}
}

// listed reports whether an event would be kept whole in the report (and
// so must be decoded whole): a list it belongs to still has room.
func (s *summary) listed(event, decision []byte) bool {
	r := s.rep
	return (len(decision) >= 3 && string(decision[:3]) == "ask" || string(event) == EventAsk) && len(r.Asks) < MaxListed ||
		string(event) == EventLimit && len(r.Limits) < MaxListed || string(event) == EventViolation && len(r.Violations) < MaxListed
}

// finish sorts and bounds the accumulated counts into the Report.
func (s *summary) finish() *Report {
	s.rep.Runs = len(s.runs)
	for _, r := range s.runOrder {
		s.rep.RunList = append(s.rep.RunList, *s.runList[r])
	}
	for r, n := range s.rules {
		s.rep.TopRules = append(s.rep.TopRules, RuleCount{Rule: r, Count: n})
	}
	slices.SortFunc(s.rep.TopRules, func(x, y RuleCount) int { return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Rule, y.Rule)) })
	if len(s.rep.TopRules) > MaxTopDenied {
		s.rep.TopRules = s.rep.TopRules[:MaxTopDenied]
	}
	for _, a := range s.agents {
		s.rep.ByAgent = append(s.rep.ByAgent, *a)
	}
	for _, h := range s.hosts {
		s.rep.Hosts = append(s.rep.Hosts, *h)
	}
	slices.SortFunc(s.rep.Hosts, func(x, y HostUse) int { return cmp.Or(cmp.Compare(x.Agent, y.Agent), cmp.Compare(x.Host, y.Host)) })
	slices.SortFunc(s.rep.ByAgent, func(x, y AgentCount) int {
		return cmp.Or(cmp.Compare(y.Events, x.Events), cmp.Compare(x.Agent, y.Agent))
	})
	for _, d := range s.denied {
		slices.Sort(d.Rules)
		s.rep.TopDenied = append(s.rep.TopDenied, *d)
	}
	slices.SortFunc(s.rep.TopDenied, func(x, y DeniedAction) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Action, y.Action))
	})
	if len(s.rep.TopDenied) > MaxTopDenied {
		s.rep.TopDenied = s.rep.TopDenied[:MaxTopDenied]
	}
	return s.rep
}

// WriteText prints the report for a terminal. Every string that came from
// the log is passed through Printable, since actions and argv are chosen by
// sandboxed code and must not reach the reviewer's terminal as escape codes.
func (rep *Report) WriteText(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	if rep.File != "" {
		p("log\t%s\n", Printable(rep.File))
	}
	if rep.Integrity != "" {
		p("integrity\t%s\n", Printable(rep.Integrity))
	}
	if !rep.Since.IsZero() {
		p("since\t%s\n", fmtTime(rep.Since))
	}
	p("events\t%d\n", rep.Events)
	if rep.Events > 0 {
		p("period\t%s .. %s\n", fmtTime(rep.First), fmtTime(rep.Last))
	}
	p("runs\t%d\n", rep.Runs)
	p("malformed lines\t%d\n", len(rep.Malformed))
	for _, m := range rep.Malformed {
		p("  %s\n", Printable(m))
	}
	section := func(title string, n int) {
		p("\n%s", title)
		if n == 0 {
			p(": none\n")
		} else {
			p(":\n")
		}
	}
	section("decisions", len(rep.ByDecision))
	for _, k := range sortedKeys(rep.ByDecision) {
		p("  %s\t%d\n", Printable(k), rep.ByDecision[k])
	}
	section("events by kind", len(rep.ByEvent))
	for _, k := range sortedKeys(rep.ByEvent) {
		p("  %s\t%d\n", Printable(k), rep.ByEvent[k])
	}
	section("agents", len(rep.ByAgent))
	for _, a := range rep.ByAgent {
		var parts []string
		for _, k := range sortedKeys(a.Decisions) {
			parts = append(parts, fmt.Sprintf("%s %d", k, a.Decisions[k]))
		}
		p("  %s\t%d events\t%s\n", Printable(orDash(a.Agent)), a.Events, Printable(strings.Join(parts, ", ")))
	}
	section("top denied actions", len(rep.TopDenied))
	for _, d := range rep.TopDenied {
		p("  %d\t%s\t%s\n", d.Count, Printable(clip(d.Action, 100)), Printable(strings.Join(d.Rules, ", ")))
	}
	section("asks", len(rep.Asks))
	for _, e := range rep.Asks {
		who := e.Approver
		if who == "" {
			who = "-"
		}
		p("  %s\t%s\t%s\tapprover %s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Decision)), Printable(who), Printable(clip(e.Action, 100)))
	}
	section("network hosts (egress proxy)", len(rep.Hosts))
	for _, h := range rep.Hosts {
		p("  %s\t%s\tallowed %d\trefused %d\tup %d B\tdown %d B\n", Printable(orDash(h.Agent)), Printable(h.Host), h.Allowed, h.Refused, h.BytesUp, h.BytesDown)
	}
	section("limit hits", len(rep.Limits))
	for _, e := range rep.Limits {
		p("  %s\t%s\t%s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Limit)), Printable(e.Reason))
	}
	section("violations", len(rep.Violations))
	for _, e := range rep.Violations {
		p("  %s\t%s\t%s\t%s\n", fmtTime(e.Time), Printable(orDash(e.Agent)), Printable(orDash(e.Action)), Printable(e.Reason))
	}
	return tw.Flush()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	return keys
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Printable returns s with control characters, invalid UTF-8 and other
// non-printable runes replaced by Go escapes (\x1b, \n, \u202e...), so text
// chosen by sandboxed code cannot move the cursor, recolour or rewrite a
// reviewer's terminal. Tabs are escaped too, so tables stay aligned.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// SummarizeFile reads the log at path once: it builds the Report of the
// events filter selects and verifies the whole chain (against the head
// file and <log>.key, as VerifyFile does) in the same pass. verr is the
// integrity failure, if any (the report is still complete); err is a
// failure to read the log at all.
func SummarizeFile(path string, filter Filter) (rep *Report, res VerifyResult, verr, err error) {
	head, herr := ReadHeadFile(path)
	keys, kerr := defaultKeys(path)
	if kerr != nil {
		return nil, res, nil, kerr
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, res, nil, fmt.Errorf("audit: open log: %w", err)
	}
	defer f.Close()
	v := &chainVerifier{head: head, keys: keys}
	if herr != nil {
		verr = &VerifyError{Reason: fmt.Sprintf("head file: %v", herr)}
	}
	s := newSummary(filter)
	if runtime.GOMAXPROCS(0) > 1 {
		// Several CPUs: lines are scanned, hashed and MAC-checked on all of
		// them (verify's parallel scan); the chain and the summary follow
		// in file order here.
		rerr := scanParallel(f, keys, false, func(line []byte, n int, pr *pre) bool {
			if verr == nil {
				if err := v.lineInfoPre(line, n, pr); err != nil {
					verr = err
				}
			}
			s.summaryLine(line, n, &pr.li, pr.fast)
			return true
		}, func(err error, frag []byte) bool {
			if verr == nil && v.unfinishedTail(err, frag) {
				return true
			}
			s.rep.Malformed = append(s.rep.Malformed, err.Error())
			if verr == nil {
				verr = v.lineError(err)
			}
			return true
		})
		if rerr != nil {
			return nil, res, nil, rerr
		}
		if verr == nil {
			res, verr = v.finish()
			if verr == nil {
				res.Warnings = append(res.Warnings, permissionWarnings(path, path+HeadSuffix)...)
			}
		}
		return s.finish(), res, verr, nil
	}
	p := s.pipeline()
	lr := newLineReader(f)
	for {
		line, n, rerr := lr.next()
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			le, ok := rerr.(*LineError)
			if !ok {
				p.close()
				return nil, res, nil, rerr
			}
			if verr == nil && v.unfinishedTail(rerr, line) {
				continue
			}
			p.malformed(le.Error())
			if verr == nil {
				verr = v.lineError(rerr)
			}
			continue
		}
		li, fast := scanInfo(line)
		if verr == nil {
			if err := v.lineInfo(line, n, li, fast && string(li.event) != EventViolation); err != nil {
				verr = err
			}
		}
		p.line(line, n, li, fast)
	}
	p.close()
	if verr == nil {
		res, verr = v.finish()
		if verr == nil {
			res.Warnings = append(res.Warnings, permissionWarnings(path, path+HeadSuffix)...)
		}
	}
	return s.finish(), res, verr, nil
}

// summaryLine adds one well-formed line to the summary: from its field
// scan when the summary needs no more of it, decoded whole otherwise.
func (s *summary) summaryLine(line []byte, n int, li *lineInfo, fast bool) {
	if fast && !s.listed(li.event, li.decision) && len(li.action) > 0 {
		e := s.light(li)
		if s.filter.Match(e) {
			s.add(e)
		}
		return
	}
	e, perr := ParseLine(line)
	if perr != nil {
		s.rep.Malformed = append(s.rep.Malformed, (&LineError{Line: n, Err: perr}).Error())
		return
	}
	if s.filter.Match(&e) {
		s.add(&e)
	}
}

// summaryPipe hands lines, in batches, from the goroutine that reads and
// verifies the log to one that summarizes them, so that SummarizeFile's
// one pass costs about what verification alone does on two CPUs. A
// fixed number of batches circulate: memory stays flat in the log's size.
type summaryPipe struct {
	s          *summary
	cur        *summaryBatch
	work, free chan *summaryBatch
	done       chan struct{}
}

// summaryBatch is a run of lines copied out of the line reader's buffer.
type summaryBatch struct {
	buf   []byte
	items []summaryItem
}

// summaryItem is one line of a batch (line and li point into the batch's
// buffer), or a malformed line's message.
type summaryItem struct {
	line      []byte
	n         int
	li        lineInfo
	fast      bool
	malformed string
}

const (
	summaryBatches   = 4
	summaryBatchSize = 256 << 10
)

// pipeline starts s's summarizing goroutine.
func (s *summary) pipeline() *summaryPipe {
	p := &summaryPipe{s: s, work: make(chan *summaryBatch, summaryBatches), free: make(chan *summaryBatch, summaryBatches), done: make(chan struct{})}
	for range summaryBatches {
		p.free <- &summaryBatch{buf: make([]byte, 0, summaryBatchSize)}
	}
	go func() {
		defer close(p.done)
		for b := range p.work {
			for i := range b.items {
				it := &b.items[i]
				if it.line == nil {
					s.rep.Malformed = append(s.rep.Malformed, it.malformed)
				} else {
					s.summaryLine(it.line, it.n, &it.li, it.fast)
				}
			}
			b.buf, b.items = b.buf[:0], b.items[:0]
			p.free <- b
		}
	}()
	return p
}

// line queues line n (valid only until the reader's next call: it is
// copied) with its field scan.
func (p *summaryPipe) line(line []byte, n int, li lineInfo, fast bool) {
	b := p.batch(len(line))
	off := len(b.buf)
	b.buf = append(b.buf, line...)
	cp := b.buf[off:len(b.buf):len(b.buf)]
	if fast {
		fast = li.rebase(line, cp)
	}
	b.items = append(b.items, summaryItem{line: cp, n: n, li: li, fast: fast})
}

// malformed queues a malformed line's message (kept in file order).
func (p *summaryPipe) malformed(msg string) {
	b := p.batch(0)
	b.items = append(b.items, summaryItem{malformed: msg})
}

// batch returns the batch being filled, sending it on first when need
// more bytes would not fit.
func (p *summaryPipe) batch(need int) *summaryBatch {
	if p.cur != nil && len(p.cur.buf)+need > cap(p.cur.buf) && len(p.cur.items) > 0 {
		p.work <- p.cur
		p.cur = nil
	}
	if p.cur == nil {
		p.cur = <-p.free
	}
	return p.cur
}

// close sends the last batch and waits until every line is summarized.
func (p *summaryPipe) close() {
	if p.cur != nil && len(p.cur.items) > 0 {
		p.work <- p.cur
	}
	p.cur = nil
	close(p.work)
	<-p.done
}

// light is the event of a line the field scan read, with the fields a
// summary uses (strings interned: agents, rules and actions repeat).
func (s *summary) light(li *lineInfo) *Event {
	e := &s.scratch
	*e = Event{Time: fastTime(li.ts), Agent: s.inAt(0, li.agent), Role: s.inAt(1, li.role), Run: s.inAt(2, li.run), Event: s.inAt(3, li.event),
		Action: s.inAt(4, li.action), Decision: s.inAt(5, li.decision), Rule: s.inAt(6, li.rule), Approver: s.inAt(7, li.approver)}
	if li.hasExit {
		x := li.exit
		e.Exit = &x
	}
	if len(li.detail) > 0 && e.Event == EventNet {
		clear(s.detail)
		for _, k := range []string{"bytes_up", "bytes_down"} {
			if v := detailValue(li.detail, k); v != "" {
				s.detail[k] = v
			}
		}
		e.Detail = s.detail
	}
	return e
}

// inAt is in with a one-entry cache per field (the same agent, role and
// run come in stretches).
func (s *summary) inAt(i int, b []byte) string {
	if string(b) == s.lastIn[i] {
		return s.lastIn[i]
	}
	v := s.in(b)
	s.lastIn[i] = v
	return v
}

// in returns b as a string, shared with earlier equal ones.
func (s *summary) in(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := s.intern[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.intern) < 1<<16 {
		s.intern[v] = v
	}
	return v
}

// fastTime parses agentbox's own timestamps (2026-11-23T10:00:00.123Z)
// without time.Parse; anything else goes through it.
func fastTime(b []byte) time.Time {
	if t, ok := parseTimeFast(b); ok {
		return t
	}
	t, _ := time.Parse(time.RFC3339Nano, string(b))
	return t
}

// parseTimeFast reads a UTC RFC 3339 time with up to nine fractional
// digits; ok is false for anything else (time.Parse decides).
func parseTimeFast(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, len(s) > 0
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	ns := 0
	if len(b) > 20 {
		frac := b[19 : len(b)-1]
		if len(frac) < 2 || frac[0] != '.' || len(frac) > 10 {
			return time.Time{}, false
		}
		var ok bool
		if ns, ok = num(frac[1:]); !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			ns *= 10
		}
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if t.Day() != d || int(t.Month()) != mo || t.Year() != y {
		return time.Time{}, false // Feb 30 and the like: time.Parse refuses them
	}
	return t, true
}
