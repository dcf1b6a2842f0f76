package fleet

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadOTLPJSON(t *testing.T) {
	req := `{"resourceLogs":[{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"h1"}},{"key":"agentbox.log.path","value":{"stringValue":"/l"}}]},"scopeLogs":[{"scope":{},"logRecords":[{"body":{"stringValue":"{\"seq\":1}"}},{"body":{"stringValue":"x"}}]}]}]}`
	tests := []struct {
		name, in string
		want     int
		err      string
	}{
		{"two records", req + "\n", 2, ""},
		{"two requests", req + "\n" + req + "\n", 4, ""},
		{"empty", "", 0, ""},
		{"not json", "hello\n", 0, "f.json: request 1: not OTLP/JSON"},
		{"no host", `{"resourceLogs":[{"resource":{},"scopeLogs":[{"logRecords":[{"body":{"stringValue":"x"}}]}]}]}`, 0, "without host.name"},
		{"no body", `{"resourceLogs":[{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"h"}}]},"scopeLogs":[{"logRecords":[{"body":{"intValue":"3"}}]}]}]}`, 0, "no string body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Line
			err := ReadOTLPJSON(strings.NewReader(tt.in), "f.json", func(l Line) { got = append(got, l) })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %d lines, %v; want %d", len(got), err, tt.want)
			}
			if len(got) > 0 && (got[0].Host != "h1" || got[0].Log != "/l" || string(got[0].Bytes) != `{"seq":1}`) {
				t.Fatalf("line %+v", got[0])
			}
		})
	}
}

func FuzzReadOTLPJSON(f *testing.F) {
	f.Add([]byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"host.name","value":{"stringValue":"h1"}}]},"scopeLogs":[{"logRecords":[{"body":{"stringValue":"{}"}}]}]}]}`))
	f.Add([]byte(`{"resourceLogs":[]}` + "\n" + `{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var lines []Line
		if err := ReadOTLPJSON(bytes.NewReader(b), "fuzz", func(l Line) { lines = append(lines, l) }); err != nil {
			return
		}
		Verify(lines, Keys{}) // must not panic on whatever was received
	})
}
