package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppend: Append writes what encoding/json writes (HTML escaping off).
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\r\t\b\f\x01\x1f\x7f", "<>&", "\u2028\u2029", "\xff\xfe", "é😀\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, s); !bytes.Equal(append(got, '\n'), want.Bytes()) {
			t.Fatalf("Append(%q) = %s, encoding/json writes %s", s, got, want.Bytes())
		}
	})
}
