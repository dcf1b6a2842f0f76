package export

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/agentbox/agentbox/audit"
)

// Format names how an event's fields are named in the exported record.
type Format string

const (
	// FormatOTel names the fields in the spirit of OpenTelemetry's
	// semantic conventions: process.* where one fits, agentbox.* for the
	// rest (the default).
	FormatOTel Format = "otel"
	// FormatOCSF names them after the Open Cybersecurity Schema
	// Framework: class_uid, activity_id, actor.*, process.*, policy.*, ...
	// (docs/operations.md has the table). OCSF-shaped, not validated
	// against the OCSF schema.
	FormatOCSF Format = "ocsf"
)

// ParseFormat parses the --format values otel and ocsf.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatOTel:
		return FormatOTel, nil
	case FormatOCSF:
		return FormatOCSF, nil
	}
	return "", fmt.Errorf("export format %q: want otel or ocsf", s)
}

// Integrity attributes, the same in every format: with the body (the
// log line, byte for byte) they let the receiving side re-verify each
// host's chain and MACs (VerifyFleet).
const (
	AttrSeq  = "agentbox.seq"
	AttrPrev = "agentbox.prev"
	AttrKid  = "agentbox.kid"
	AttrMac  = "agentbox.mac"
	AttrRun  = "agentbox.run"
	// AttrMalformed marks a record whose body is a line the local log
	// holds but that does not parse as an event (sent as it is, so the
	// receiver's verification fails where the local one does).
	AttrMalformed = "agentbox.malformed"
	// ResHost and ResLog are resource attributes: the host that wrote the
	// log and the log's path there. One chain per (host, log).
	ResHost = "host.name"
	ResLog  = "agentbox.log.path"
)

// Source names the log being exported: its host and path become the
// records' resource, which tells the receiver which chain a record
// belongs to.
type Source struct {
	Host string // host.name (default: os.Hostname)
	Log  string // the local log's path
}

// recorder turns log lines into SDK log records through a LoggerProvider
// whose one processor keeps them: the records then carry the provider's
// resource and scope exactly as the SDK would ship them, and delivery
// (batching, acknowledgement, the cursor) stays with the Follower, which
// hands them to the OTLP exporter itself.
type recorder struct {
	format Format
	lp     *sdklog.LoggerProvider
	logger otellog.Logger
	keep   *keeper
}

// keeper is the processor that collects what the logger emits.
type keeper struct{ recs []sdklog.Record }

func (k *keeper) OnEmit(_ context.Context, r *sdklog.Record) error {
	k.recs = append(k.recs, r.Clone())
	return nil
}
func (k *keeper) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (k *keeper) Shutdown(context.Context) error                         { return nil }
func (k *keeper) ForceFlush(context.Context) error                       { return nil }

func newRecorder(src Source, format Format) *recorder {
	res := resource.NewSchemaless(
		attribute.String("service.name", "agentbox"),
		attribute.String(ResHost, src.Host),
		attribute.String(ResLog, src.Log),
	)
	k := &keeper{}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(k),
		sdklog.WithAttributeCountLimit(-1), sdklog.WithAttributeValueLengthLimit(-1),
		// Keys are unique by construction: the SDK need not dedup them.
		sdklog.WithAllowKeyDuplication())
	return &recorder{format: format, lp: lp, logger: lp.Logger("github.com/agentbox/agentbox/audit/export"), keep: k}
}

// take returns the records made since the last take.
func (r *recorder) take() []sdklog.Record {
	out := r.keep.recs
	r.keep.recs = nil
	return out
}

// add makes the record of one log line (without its newline) and
// returns the line's seq (ok false: the line is not an event).
func (r *recorder) add(line []byte) (seq uint64, ok bool) {
	var rec otellog.Record
	rec.SetObservedTimestamp(time.Now())
	rec.SetBody(attribute.StringValue(string(line)))
	e, err := audit.ParseLine(line)
	if err != nil {
		rec.SetSeverity(otellog.SeverityError)
		rec.SetSeverityText("ERROR")
		rec.SetEventName("agentbox.malformed")
		rec.AddAttributes(attribute.Bool(AttrMalformed, true), attribute.String("error.message", err.Error()))
		r.logger.Emit(context.Background(), rec)
		return 0, false
	}
	rec.SetTimestamp(e.Time)
	sev, text := otellog.SeverityInfo, "INFO"
	if audit.Refused(e.Decision) || e.Event == audit.EventViolation || e.Decision == audit.DecisionAnswerRefused {
		sev, text = otellog.SeverityWarn, "WARN"
	}
	rec.SetSeverity(sev)
	rec.SetSeverityText(text)
	rec.SetEventName("agentbox." + e.Event)
	rec.AddAttributes(
		attribute.Int64(AttrSeq, int64(e.Seq)),
		attribute.String(AttrPrev, e.Prev),
		attribute.String(AttrRun, e.Run),
	)
	if e.Kid != "" {
		rec.AddAttributes(attribute.String(AttrKid, e.Kid), attribute.String(AttrMac, e.Mac))
	}
	if r.format == FormatOCSF {
		rec.AddAttributes(ocsfAttrs(&e)...)
	} else {
		rec.AddAttributes(otelAttrs(&e)...)
	}
	r.logger.Emit(context.Background(), rec)
	return e.Seq, true
}

// kv collects attributes, leaving out empty values.
type kv []attribute.KeyValue

func (a *kv) str(k, v string) {
	if v != "" {
		*a = append(*a, attribute.String(k, v))
	}
}
func (a *kv) num(k string, v int) {
	if v != 0 {
		*a = append(*a, attribute.Int(k, v))
	}
}
func (a *kv) detail(prefix string, d map[string]string) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a.str(prefix+k, d[k])
	}
}

// otelAttrs names an event's fields after OpenTelemetry's semantic
// conventions where one fits (process.*), agentbox.* otherwise.
func otelAttrs(e *audit.Event) []attribute.KeyValue {
	var a kv
	a.str("agentbox.event", e.Event)
	a.str("agentbox.agent", e.Agent)
	a.str("agentbox.role", e.Role)
	a.str("agentbox.action", e.Action)
	a.str("agentbox.decision", e.Decision)
	a.str("agentbox.rule", e.Rule)
	a.str("agentbox.layer", e.Layer)
	a.str("agentbox.reason", e.Reason)
	a.str("agentbox.approver", e.Approver)
	a.str("agentbox.limit", e.Limit)
	a.num("process.pid", e.Pid)
	a.num("process.parent_pid", e.Ppid)
	a.str("process.working_directory", e.Cwd)
	a.str("process.executable.path", e.Exe)
	if len(e.Argv) > 0 {
		a = append(a, attribute.StringSlice("process.command_args", e.Argv))
	}
	if e.Exit != nil {
		a = append(a, attribute.Int("process.exit.code", *e.Exit))
	}
	a.str("agentbox.signal", e.Signal)
	a.detail("agentbox.detail.", e.Detail)
	return a
}

// ocsfClass is an event kind's OCSF class and activity.
type ocsfClass struct {
	class, category int
	className       string
	activity        int
	activityName    string
}

var ocsfClasses = map[string]ocsfClass{
	audit.EventLaunch:    {1007, 1, "Process Activity", 1, "Launch"},
	audit.EventExec:      {1007, 1, "Process Activity", 1, "Launch"},
	audit.EventGit:       {1007, 1, "Process Activity", 1, "Launch"},
	audit.EventExit:      {1007, 1, "Process Activity", 2, "Terminate"},
	audit.EventLimit:     {1007, 1, "Process Activity", 99, "Other"},
	audit.EventNet:       {4001, 4, "Network Activity", 1, "Open"},
	audit.EventTool:      {6003, 6, "API Activity", 99, "Other"},
	audit.EventAsk:       {3003, 3, "Authorize Session", 99, "Other"},
	audit.EventRole:      {3003, 3, "Authorize Session", 99, "Other"},
	audit.EventRevoke:    {3003, 3, "Authorize Session", 99, "Other"},
	audit.EventViolation: {2004, 2, "Detection Finding", 1, "Create"},
	audit.EventApply:     {1001, 1, "File System Activity", 99, "Other"},
	audit.EventDiscard:   {1001, 1, "File System Activity", 4, "Delete"},
	audit.EventRotate:    {0, 0, "Base Event", 99, "Other"},
}

// ocsfAttrs names an event's fields after OCSF (flattened with dots).
func ocsfAttrs(e *audit.Event) []attribute.KeyValue {
	c, ok := ocsfClasses[e.Event]
	if !ok {
		c = ocsfClass{0, 0, "Base Event", 99, "Other"}
	}
	var a kv
	a = append(a,
		attribute.Int("class_uid", c.class),
		attribute.String("class_name", c.className),
		attribute.Int("category_uid", c.category),
		attribute.Int("activity_id", c.activity),
		attribute.String("activity_name", c.activityName),
		attribute.Int("type_uid", c.class*100+c.activity),
		attribute.Int64("time", e.Time.UnixMilli()),
		attribute.String("metadata.product.name", "agentbox"),
		attribute.String("metadata.product.vendor_name", "agentbox"),
		attribute.String("metadata.log_name", "agentbox-audit"),
		attribute.String("metadata.uid", fmt.Sprintf("%s/%d", e.Run, e.Seq)),
	)
	sev := 1 // Informational
	switch {
	case e.Event == audit.EventViolation:
		sev = 4 // High
	case audit.Refused(e.Decision):
		sev = 3 // Medium
	}
	a = append(a, attribute.Int("severity_id", sev))
	switch {
	case e.Decision == "":
	case audit.Refused(e.Decision) || e.Decision == audit.DecisionAnswerRefused:
		a = append(a, attribute.Int("action_id", 2), attribute.String("action", "Denied"),
			attribute.Int("disposition_id", 2), attribute.String("disposition", "Blocked"))
	case e.Decision == audit.DecisionAllow || e.Decision == audit.DecisionAskApproved:
		a = append(a, attribute.Int("action_id", 1), attribute.String("action", "Allowed"),
			attribute.Int("disposition_id", 1), attribute.String("disposition", "Allowed"))
	default:
		a = append(a, attribute.Int("action_id", 99), attribute.String("action", "Other"))
	}
	a.str("status_detail", e.Decision)
	a.str("actor.user.name", e.Agent)
	a.str("actor.user.type", e.Role)
	a.str("actor.authorizations.decision", e.Approver)
	a.str("policy.uid", e.Rule)
	a.str("policy.name", e.Layer)
	a.str("message", e.Reason)
	a.num("process.pid", e.Pid)
	a.num("process.parent_process.pid", e.Ppid)
	a.str("process.working_directory", e.Cwd)
	a.str("process.file.path", e.Exe)
	if len(e.Argv) > 0 {
		a.str("process.cmd_line", strings.Join(e.Argv, " "))
	}
	if e.Exit != nil {
		a = append(a, attribute.Int("exit_code", *e.Exit))
	}
	a.str("unmapped.event", e.Event)
	a.str("unmapped.action", e.Action)
	a.str("unmapped.signal", e.Signal)
	a.str("unmapped.limit", e.Limit)
	a.detail("unmapped.detail.", e.Detail)
	return a
}
