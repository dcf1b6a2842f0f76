package audit

import (
	"slices"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/internal/jsonstr"
)

// appendEventLine appends e as one JSON line ending in '\n', byte for byte
// what encoding/json's Encoder with SetEscapeHTML(false) writes for an
// Event (FuzzAppendEventLine holds the two equal), without reflection: it
// runs for every audited exec. e.Time's year must be within 0-9999 and its
// zone offset whole minutes (what time.Time.MarshalJSON accepts;
// marshalLine checks).
func appendEventLine(b []byte, e *Event) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"prev":`...)
	b = jsonstr.Append(b, e.Prev)
	b = appendStringField(b, "agent", e.Agent)
	b = appendStringField(b, "role", e.Role)
	b = appendStringField(b, "run", e.Run)
	b = append(b, `,"event":`...)
	b = jsonstr.Append(b, e.Event)
	b = appendIntField(b, "pid", e.Pid)
	b = appendIntField(b, "ppid", e.Ppid)
	b = appendStringField(b, "cwd", e.Cwd)
	b = appendStringField(b, "action", e.Action)
	if len(e.Argv) > 0 {
		b = append(b, `,"argv":[`...)
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, a)
		}
		b = append(b, ']')
	}
	b = appendStringField(b, "exe", e.Exe)
	b = appendStringField(b, "decision", e.Decision)
	b = appendStringField(b, "rule", e.Rule)
	b = appendStringField(b, "layer", e.Layer)
	b = appendStringField(b, "reason", e.Reason)
	b = appendStringField(b, "approver", e.Approver)
	if e.Exit != nil {
		b = append(b, `,"exit":`...)
		b = strconv.AppendInt(b, int64(*e.Exit), 10)
	}
	b = appendStringField(b, "signal", e.Signal)
	b = appendStringField(b, "limit", e.Limit)
	if len(e.Detail) > 0 {
		keys := make([]string, 0, len(e.Detail))
		for k := range e.Detail {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"detail":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k)
			b = append(b, ':')
			b = jsonstr.Append(b, e.Detail[k])
		}
		b = append(b, '}')
	}
	b = appendStringField(b, "kid", e.Kid)
	b = appendStringField(b, "mac", e.Mac)
	return append(b, "}\n"...)
}

// appendStringField appends ,"name":value unless value is empty (omitempty).
func appendStringField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return jsonstr.Append(b, value)
}

// appendIntField appends ,"name":n unless n is 0 (omitempty).
func appendIntField(b []byte, name string, n int) []byte {
	if n == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(n), 10)
}
