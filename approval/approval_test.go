package approval

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		in      string
		want    Answer
		allowed bool
		always  bool
	}{
		{"allow", AllowOnce, true, false},
		{"allow_always", AllowAlways, true, true},
		{"deny", DenyOnce, false, false},
		{"deny_always", DenyAlways, false, true},
		{"remember", Remember, true, false},
	}
	for _, tt := range tests {
		got, err := ParseAnswer(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseAnswer(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in || got.Allowed() != tt.allowed || got.Always() != tt.always {
			t.Errorf("%v: String=%q Allowed=%v Always=%v", got, got.String(), got.Allowed(), got.Always())
		}
	}
	for _, bad := range []string{"", "Allow", "ALLOW", "yes", "y", "allow ", "allow_once", "0", "invalid"} {
		if a, err := ParseAnswer(bad); err == nil {
			t.Errorf("ParseAnswer(%q) = %v, want error", bad, a)
		}
	}
	var zero Answer
	if zero.Allowed() || zero.String() != "invalid" || Answer(99).Allowed() {
		t.Error("zero or out-of-range Answer must not allow")
	}
}

func TestNewSpec(t *testing.T) {
	for _, spec := range []string{"", "ttyy", "socket:", "socket", "auto", "None"} {
		_, err := New(spec, Options{})
		if err == nil || !strings.Contains(err.Error(), "--approve") || !strings.Contains(err.Error(), `"`+spec+`"`) {
			t.Errorf("New(%q) error = %v, want one naming the value", spec, err)
		}
	}
	a, err := New("none", Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Approve(context.Background(), Request{Argv: []string{"git", "push"}})
	if !errors.Is(err, ErrUnavailable) || resp.Answer.Allowed() {
		t.Errorf("none: got %v, %v; want ErrUnavailable", resp, err)
	}
}
