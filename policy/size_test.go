package policy

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSize checks ParseSize never panics and that accepted values
// round-trip for plain byte counts.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64M", "2G", "512k", "1.5G", "1048576", "", "-1", "1e9", "9223372036854775807", "9223372036854775808", "8E", ".5k", "1..2M", "0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error %q does not quote the value %q", err, s)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		if u, err := strconv.ParseUint(strings.TrimSpace(s), 10, 63); err == nil && int64(u) != n {
			t.Fatalf("ParseSize(%q) = %d, want %d", s, n, u)
		}
	})
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"1048576", 1 << 20, ""},
		{"512k", 512 << 10, ""},
		{"512K", 512 << 10, ""},
		{"64M", 64 << 20, ""},
		{"64mb", 64 << 20, ""},
		{"64MiB", 64 << 20, ""},
		{"2G", 2 << 30, ""},
		{"1.5G", 3 << 29, ""},
		{" 1T ", 1 << 40, ""},
		{"0.5k", 512, ""},
		{"0.3k", 307, ""},
		{"100b", 100, ""},
		{"8388607T", 8388607 << 40, ""},
		{"8388608T", 0, "larger than"},
		{"9223372036854775807", 9223372036854775807, ""},
		{"9223372036854775808", 0, "larger than"},
		{"", 0, "want a number"},
		{"M", 0, "want a number"},
		{"-1M", 0, "want a number"},
		{"1e9", 0, "unknown unit"},
		{"12X", 0, "unknown unit"},
		{"1.2.3M", 0, "want a number"},
		{".5M", 0, "want a number"},
		{"5.M", 0, "want a number"},
		{"0x10", 0, "unknown unit"},
	} {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), strconv.Quote(tc.in)) {
				t.Errorf("ParseSize(%q) = %d, %v; want error containing %q and the value", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
