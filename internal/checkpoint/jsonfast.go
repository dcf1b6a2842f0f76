package checkpoint

import (
	"encoding/json"
	"strconv"
)

// A launch is a new process, and encoding/json builds each struct type's
// encoder the first time it meets it (its fields, tags and the encoders
// under them): ~0.1-0.15 ms of CPU each for the journal's question and
// the index's start line, on the start checkpoint's path (perf over 30
// launches). These two are written field by field instead, to the bytes
// json.Marshal gives (TestJournalAskEncoding, FuzzAppendIndexEntry);
// strings still go through json.Marshal, whose string encoder costs
// nothing to build, so they are escaped exactly as before.
// The journal's answers are read the same way: jsonread.go.

// appendJSONString appends s as a JSON string, escaped as json.Marshal
// escapes it.
func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil {
		// json.Marshal of a string does not fail; keep the output JSON
		return append(b, `""`...)
	}
	return append(b, q...)
}

// appendJSONStrings appends l as a JSON array of strings (null for nil).
func appendJSONStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendAreas appends l as json.Marshal encodes a []Area.
func appendAreas(b []byte, l []Area) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, a := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, a.Name)
		b = append(b, `,"dir":`...)
		b = appendJSONString(b, a.Dir)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAsk appends q, which has no Delta, as json.Marshal encodes it.
func appendAsk(b []byte, q journalReq) []byte {
	b = append(b, `{"op":`...)
	b = appendJSONString(b, q.Op)
	b = append(b, `,"areas":`...)
	b = appendAreas(b, q.Areas)
	if len(q.Exclude) > 0 {
		b = append(b, `,"exclude":`...)
		b = appendJSONStrings(b, q.Exclude)
	}
	b = append(b, `,"roots":`...)
	b = appendJSONStrings(b, q.Roots)
	if len(q.From) > 0 {
		b = append(b, `,"from":`...)
		b = appendJSONStrings(b, q.From)
	}
	if q.Gen != 0 {
		b = append(b, `,"gen":`...)
		b = strconv.AppendUint(b, q.Gen, 10)
	}
	if q.Head {
		b = append(b, `,"head":true`...)
	}
	if q.Share {
		b = append(b, `,"share":true`...)
	}
	return append(b, '}')
}

// appendIndexEntry appends e as json.Marshal encodes it (one line of a
// run's index, without its newline).
func appendIndexEntry(b []byte, e IndexEntry) ([]byte, error) {
	t, err := e.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, e.Kind)
	b = append(b, `,"run":`...)
	b = appendJSONString(b, e.Run)
	b = append(b, `,"checkpoint":`...)
	b = appendJSONString(b, e.Checkpoint)
	b = append(b, `,"time":`...)
	b = append(b, t...)
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, e.Seq, 10)
	}
	if e.Pid != 0 {
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(e.Pid), 10)
	}
	if len(e.Argv) > 0 {
		b = append(b, `,"argv":`...)
		b = appendJSONStrings(b, e.Argv)
	}
	if len(e.Areas) > 0 {
		b = append(b, `,"areas":`...)
		b = appendAreas(b, e.Areas)
	}
	if e.Of != "" {
		b = append(b, `,"of":`...)
		b = appendJSONString(b, e.Of)
	}
	if e.Exit != nil {
		b = append(b, `,"exit":`...)
		b = strconv.AppendInt(b, int64(*e.Exit), 10)
	}
	return append(b, '}'), nil
}
