package command

import (
	"strings"
	"testing"
)

// TestScriptConstants: a variable assigned once, at the top level, to a
// literal, and touched nowhere else, is known where it is expanded after
// the assignment — in the script and in a trap handler (same shell), not
// in sh -c (a new process). Any other assignment, read, unset, for loop,
// printf -v, arithmetic, or use before the assignment leaves it unknown.
func TestScriptConstants(t *testing.T) {
	write := func(line string) string {
		items, err := ParseShellIn(line, "/w/target")
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var out []string
		for _, it := range items {
			if strings.HasPrefix(it.Action, "tool:create_file:") {
				out = append(out, strings.TrimPrefix(it.Action, "tool:create_file:"))
			}
		}
		return strings.Join(out, " ")
	}
	known := "/w/agents/main/tmp/bgpids"
	for _, c := range []struct {
		line string
		want bool // the write is to the constant's value
	}{
		{"f=" + known + "\necho x > \"$f\"", true},
		{"f=" + known + "; echo x > ${f}", true},
		{"f=" + known + "\n( trap 'jobs -p > \"$f\"' EXIT\n true )", true},
		{"f=" + known + "\nsh -c 'echo x > \"$f\"'", false},
		{"f=" + known + "\nf=/etc/x\necho x > \"$f\"", false},
		{"f=" + known + "\nread f\necho x > \"$f\"", false},
		{"f=" + known + "\nunset f\necho x > \"$f\"", false},
		{"f=" + known + "\nfor f in /etc/x; do :; done\necho x > \"$f\"", false},
		{"f=" + known + "\nprintf -v f %s /etc/x\necho x > \"$f\"", false},
		{"f=" + known + "\n(( f = 3 ))\necho x > \"$f\"", false},
		{"echo x > \"$f\"\nf=" + known, false},
		{"if true; then f=" + known + "; fi\necho x > \"$f\"", false},
		{"f=" + known + "\necho x > \"${f%/*}\"", false},
	} {
		got := write(c.line)
		if (got == known) != c.want {
			t.Errorf("%q: writes %q, constant known %v", c.line, got, c.want)
		}
	}
}
