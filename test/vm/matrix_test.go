package vm

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseResults holds the reader of the guest's reports: good lines
// parse, and a bad one is an error naming the file and line.
func TestParseResults(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		err      string
	}{
		{"two", `{"kernel":"6.1.0-31-amd64","user":"dev","context":"session","check":"tcp-connect","result":"pass"}` + "\n\n" +
			`{"kernel":"6.1.0-31-amd64","user":"dev","context":"session","check":"launch","result":"refused","line":"agentbox: x"}`, 2, ""},
		{"not json", "{\n", 0, "r.jsonl:1:"},
		{"unknown result", `{"kernel":"k","user":"u","check":"c","result":"maybe"}`, 0, `r.jsonl:1: result "maybe"`},
		{"no check", `{"kernel":"k","user":"u","result":"pass"}`, 0, "r.jsonl:1: check, user and kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := parseResults("r.jsonl", strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(res) != tc.n {
				t.Fatalf("got %d results, %v; want %d", len(res), err, tc.n)
			}
		})
	}
}

// TestVerdict holds what the matrix accepts: a pass, or a refusal with
// agentbox's one line; a fail, a bare refusal and a missing cell are not.
func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *result
		ok   bool
	}{
		{"pass", &result{Result: "pass"}, true},
		{"refused named", &result{Check: "context-truncate", Result: "refused", Line: "agentbox: kernel lacks Landlock truncate control (Landlock ABI 2, need 6)"}, true},
		{"refused, another protection named", &result{Check: "tcp-connect", Result: "refused", Line: "agentbox: kernel lacks Landlock truncate control (Landlock ABI 2, need 6)"}, false},
		{"refused, every protection named", &result{Check: "kill-outside", Result: "refused", Line: "agentbox: kernel lacks signal scoping, TCP control; accept with --allow-weaker signals,tcp"}, true},
		{"launch refused", &result{Check: "launch", Result: "refused", Line: "agentbox: anything"}, true},
		{"refused, not agentbox's line", &result{Check: "memory-64M", Result: "refused", Line: "Failed to connect to bus"}, false},
		{"fail", &result{Result: "fail"}, false},
		{"missing", nil, false},
	} {
		if got := verdict(tc.r) == ""; got != tc.ok {
			t.Errorf("%s: acceptable = %v, want %v (%s)", tc.name, got, tc.ok, verdict(tc.r))
		}
	}
	var buf bytes.Buffer
	bad := matrix(&buf, []string{"6.1.0-31-amd64"}, []result{{Kernel: "6.1.0-31-amd64", User: "root", Context: "session", Check: "launch", Result: "pass"}})
	if want := len(expected)*len(users) - 1; len(bad) != want {
		t.Errorf("matrix of one passing cell: %d not acceptable, want %d\n%s", len(bad), want, buf.String())
	}
}

func FuzzParseResults(f *testing.F) {
	f.Add([]byte(`{"kernel":"6.12.57+deb12-amd64","user":"root","context":"scope","check":"pids-32","result":"fail","exit":3}`))
	f.Add([]byte("{\"kernel\":\"k\"}\n{"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := parseResults("f", bytes.NewReader(b))
		if err == nil {
			for _, r := range res {
				if r.Check == "" {
					t.Fatalf("accepted a result without a check: %+v", r)
				}
			}
		}
		var buf bytes.Buffer
		matrix(&buf, []string{"6.1"}, res)
	})
}

// TestClaimsMatch: the launch event's claim of what enforces each
// protection is held to what the probe found: no claim without effect, no
// effect unclaimed.
func TestClaimsMatch(t *testing.T) {
	launch := func(prot string) result {
		return result{Kernel: "6.1.0-1-amd64", User: "dev", Context: "session", Check: "launch", Result: "pass",
			Claim: map[string]string{"event.protections": prot}}
	}
	check := func(c, res string) result {
		return result{Kernel: "6.1.0-1-amd64", User: "dev", Context: "session", Check: c, Result: res}
	}
	all := "files=landlock; truncate=mount namespace; tcp=network namespace; signals=pid namespace; abstract-unix=network namespace; pathname-unix=seccomp; metadata=mount namespace"
	for _, tc := range []struct {
		name string
		res  []result
		want string // substring of the one finding, "" for none
	}{
		{"held as claimed", []result{launch(all), check("tcp-connect", "pass"), check("outside-chmod", "pass")}, ""},
		{"claim without effect", []result{launch(all), check("tcp-connect", "fail")}, "tcp claimed enforced by network namespace, but tcp-connect did not hold"},
		{"effect unclaimed", []result{launch(strings.Replace(all, "signals=pid namespace", "signals=none (accepted: --allow-weaker signals)", 1)), check("kill-outside", "pass")}, "signals claimed not enforced, but kill-outside held"},
		{"not claimed at all", []result{launch(strings.Replace(all, "; metadata=mount namespace", "", 1)), check("outside-chmod", "pass")}, "metadata is tried by the probe but not in the launch event's claims"},
		{"no claims", []result{launch("")}, "claims no protections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := claimsMatch(tc.res)
			if tc.want == "" && len(bad) > 0 || tc.want != "" && (len(bad) != 1 || !strings.Contains(bad[0], tc.want)) {
				t.Errorf("claimsMatch = %q, want %q", bad, tc.want)
			}
		})
	}
}
