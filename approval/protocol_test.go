package approval

import (
	"encoding/json"
	"testing"
)

func TestParseClientLine(t *testing.T) {
	tests := []struct {
		line string
		want clientMessage
		ok   bool
	}{
		{`{"type":"response","id":"r1","answer":"allow"}`, clientMessage{ID: "r1", Answer: AllowOnce}, true},
		{` {"type":"response","id":"r1","answer":"deny_always","extra":[1,{}]}` + "\n", clientMessage{ID: "r1", Answer: DenyAlways}, true},
		{`{"type":"response","id":"7","answer":"remember","prefix":"git commit"}`, clientMessage{ID: "7", Answer: Remember, Prefix: "git commit"}, true},
		{`{"answer":"\u0061llow","id":"x","type":"response"}`, clientMessage{ID: "x", Answer: AllowOnce}, true},
		{``, clientMessage{}, false},
		{`allow`, clientMessage{}, false},
		{`[]`, clientMessage{}, false},
		{`"allow"`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"allow"`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"allow"}{}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"allow"} x`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"yes"}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"ALLOW"}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":1}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":null}`, clientMessage{}, false},
		{`{"type":"response","id":"r1"}`, clientMessage{}, false},
		{`{"type":"response","answer":"allow"}`, clientMessage{}, false},
		{`{"type":"response","id":"","answer":"allow"}`, clientMessage{}, false},
		{`{"type":"response","id":1,"answer":"allow"}`, clientMessage{}, false},
		{`{"type":"request","id":"r1","answer":"allow"}`, clientMessage{}, false},
		{`{"id":"r1","answer":"allow"}`, clientMessage{}, false},
		{`{"Type":"response","ID":"r1","Answer":"allow"}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"deny","answer":"allow"}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"allow","prefix":"git"}`, clientMessage{}, false},
		{`{"type":"response","id":"r1","answer":"remember","prefix":5}`, clientMessage{}, false},
	}
	for _, tt := range tests {
		got, err := parseClientLine([]byte(tt.line))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseClientLine(%s) = %+v, %v; want %+v ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	req := Request{Argv: []string{"/usr/bin/git", "commit", "-m", "x y"}}
	for _, p := range []string{"git commit", "/usr/bin/git commit", "git", "git commit -m"} {
		if err := checkPrefix(p, req); err != nil {
			t.Errorf("checkPrefix(%q): %v", p, err)
		}
	}
	for _, p := range []string{"", "  ", "git push", "rm", "bin/git", "git commit -m x y extra", "git comm"} {
		if err := checkPrefix(p, req); err == nil {
			t.Errorf("checkPrefix(%q) accepted", p)
		}
	}
}

// FuzzParseClientLine: the decoder never panics, and whatever it accepts is a
// valid JSON object whose exact "type" and "answer" members say so; garbage
// never yields an answer, let alone an allow.
func FuzzParseClientLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"response","id":"r1","answer":"allow"}`,
		`{"type":"response","id":"r1","answer":"remember","prefix":"git commit"}`,
		`{"type":"response","id":"r1","answer":"deny","answer":"allow"}`,
		`{"type":"response","id":"r1","answer":"allow"}{}`,
		`{"type":"response","id":"r1","answer":"\u0061llow"}`,
		`allow`, `{}`, `[`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseClientLine(line)
		if err != nil {
			if m != (clientMessage{}) {
				t.Fatalf("error %v but message %+v", err, m)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("accepted non-object %q: %v", line, err)
		}
		if obj["type"] != "response" || obj["answer"] != m.Answer.String() || obj["id"] != m.ID || m.ID == "" {
			t.Fatalf("accepted %q as %+v", line, m)
		}
		if m.Answer < AllowOnce || m.Answer > Remember {
			t.Fatalf("out-of-range answer %d from %q", m.Answer, line)
		}
	})
}
