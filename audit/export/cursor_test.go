package export

import (
	"strings"
	"testing"
)

func TestParseCursor(t *testing.T) {
	h := strings.Repeat("ab", 32)
	tests := []struct {
		name, in string
		want     cursorRecord
		err      string
	}{
		{"start", "agentbox-export-cursor v1 dev=0 ino=0 offset=0 seq=0 hash=-\n", cursorRecord{}, ""},
		{"position", "agentbox-export-cursor v1 dev=2049 ino=77 offset=4096 seq=12 hash=" + h + "\n", cursorRecord{2049, 77, 4096, 12, h}, ""},
		{"no newline", "agentbox-export-cursor v1 dev=0 ino=0 offset=0 seq=0 hash=-", cursorRecord{}, "newline"},
		{"other file", "agentbox-audit-head v1 seq=1\n", cursorRecord{}, "not an agentbox export cursor"},
		{"field order", "agentbox-export-cursor v1 ino=0 dev=0 offset=0 seq=0 hash=-\n", cursorRecord{}, "want dev=VALUE"},
		{"bad number", "agentbox-export-cursor v1 dev=x ino=0 offset=0 seq=0 hash=-\n", cursorRecord{}, `dev="x"`},
		{"negative offset", "agentbox-export-cursor v1 dev=0 ino=0 offset=-5 seq=0 hash=-\n", cursorRecord{}, "offset"},
		{"short hash", "agentbox-export-cursor v1 dev=0 ino=0 offset=10 seq=1 hash=abc\n", cursorRecord{}, "64 hex"},
		{"offset without hash", "agentbox-export-cursor v1 dev=0 ino=0 offset=10 seq=1 hash=-\n", cursorRecord{}, "names its line"},
		{"extra field", "agentbox-export-cursor v1 dev=0 ino=0 offset=0 seq=0 hash=- x=1\n", cursorRecord{}, "6 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCursor([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if string(got.Format()) != tt.in {
				t.Fatalf("Format %q, want %q", got.Format(), tt.in)
			}
		})
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add([]byte("agentbox-export-cursor v1 dev=0 ino=0 offset=0 seq=0 hash=-\n"))
	f.Add([]byte("agentbox-export-cursor v1 dev=2049 ino=77 offset=4096 seq=12 hash=" + strings.Repeat("0f", 32) + "\n"))
	f.Add([]byte("agentbox-export-cursor v1 dev= ino=0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCursor(b)
		if err != nil {
			return
		}
		again, err := parseCursor(c.Format())
		if err != nil || again != c {
			t.Fatalf("%q parsed to %+v, which formats to %q and parses to %+v, %v", b, c, c.Format(), again, err)
		}
	})
}
