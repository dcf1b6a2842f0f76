package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExplainAndJSON(t *testing.T) {
	e := engineWith(t, "developer", rules(`  - {id: my-make, decision: ask, command: make install}`))
	ex := e.Explain(Query{Action: "tool:bash:make install && git push origin main"})
	if ex.Result.Decision != Deny || len(ex.Segments) < 2 {
		t.Fatalf("explanation = %+v", ex)
	}
	s := exFacts(ex)
	for _, want := range []string{"DENY", "developer/git.push", "my-make", "developer/make", "most specific", "a matching deny rule always wins"} {
		if !strings.Contains(s, want) {
			t.Errorf("explanation lacks %q:\n%s", want, s)
		}
	}
	r := e.Decide(Query{Action: "tool:bash:ls && git push origin main"})
	var got struct {
		Decision string `json:"decision"`
		Action   string `json:"action"`
		Rule     *struct {
			ID, Layer, Source string
		} `json:"rule"`
		Reason   string            `json:"reason"`
		Segments []json.RawMessage `json:"segments"`
	}
	data, _ := json.Marshal(r)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if got.Decision != "deny" || got.Action != "tool:bash:ls && git push origin main" || got.Rule == nil || got.Rule.ID != "developer/git.push" ||
		got.Rule.Layer != "role" || got.Rule.Source == "" || got.Reason == "" || len(got.Segments) != 2 {
		t.Fatalf("json = %s", data)
	}
	// default decisions have "rule": null; odd bytes stay valid JSON
	r = e.Decide(Query{Action: "tool:exec:frob \x01\"\\\xff\u2028"})
	data = r.AppendJSON(nil)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m["rule"] != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// TestSessionRuleRemoval: "always" answers are listed and can be removed
// during the session (Forge FR-5.4); the action is then decided afresh.
func TestSessionRuleRemoval(t *testing.T) {
	e := engineWith(t, "developer")
	e.Session().Add(Allow, "tool:exec:curl x")
	e.Session().Add(Deny, "tool:exec:make deploy")
	rs := e.Session().Rules()
	if len(rs) != 2 {
		t.Fatalf("SessionRules = %v", rs)
	}
	if e.Decide(Query{Action: "tool:exec:curl x"}).Decision != Allow {
		t.Fatal("answer not applied")
	}
	var id string
	for _, r := range rs {
		if r.Decision == "allow" {
			id = r.ID
		}
	}
	if err := e.Session().Remove(id); err != nil {
		t.Fatal(err)
	}
	if r := e.Decide(Query{Action: "tool:exec:curl x"}); r.Decision != Ask {
		t.Errorf("after removal: %v (%s)", r.Decision, r.Reason)
	}
	if len(e.Session().Rules()) != 1 || e.Decide(Query{Action: "tool:exec:make deploy"}).Decision != Deny {
		t.Error("the other answer went too")
	}
	if err := e.Session().Remove(id); err == nil || !strings.Contains(err.Error(), "no session rule") {
		t.Errorf("second removal: %v", err)
	}
}
