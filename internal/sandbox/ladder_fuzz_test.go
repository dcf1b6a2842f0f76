package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseAllowWeaker: --allow-weaker either names only known
// protections, each given, or is refused with the value in the message;
// never a panic.
func FuzzParseAllowWeaker(f *testing.F) {
	for _, s := range []string{"tcp", "truncate, signals", "", ",", "tcp,nosuch", "metadata,abstract-unix"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := ParseAllowWeaker(v)
		if err != nil {
			if !strings.Contains(err.Error(), "--allow-weaker") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		for _, n := range got {
			if !slices.Contains(WeakerNames, n) || !strings.Contains(v, n) {
				t.Fatalf("%q gave %q", v, got)
			}
		}
	})
}
