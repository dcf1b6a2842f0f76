package policy

import (
	"errors"
	"strings"
	"testing"
)

// withAccounts stands in a user and group directory for Check.
func withAccounts(t *testing.T, accounts map[int][2]string) {
	t.Helper()
	old := accountOf
	accountOf = func(uid int) (string, []string) {
		a, ok := accounts[uid]
		if !ok {
			return "", nil
		}
		return a[0], strings.Fields(a[1])
	}
	t.Cleanup(func() { accountOf = old })
}

// TestSeedPermissionGrants: Chorus's documented role-permission mapping,
// verbatim in its server settings format, loads into the approvers mapping:
// admins grant any built-in profile, developers standard or locked,
// viewers locked only; members are the unix groups of those names.
func TestSeedPermissionGrants(t *testing.T) {
	f := writePolicy(t, "settings.json", `{
    "permission_grants": {
        "admin": ["open", "standard", "locked"],
        "developer": ["standard", "locked"],
        "viewer": ["locked"]
    }
}`)
	e, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{f}})
	if err != nil {
		t.Fatal(err)
	}
	a := e.Approvers()
	withAccounts(t, map[int][2]string{1001: {"ada", "admin"}, 1002: {"dev", "developer users"}, 1003: {"vic", "viewer"}, 1004: {"nobody2", "users"}})
	for _, tc := range []struct {
		uid  int
		role string
		ok   bool
	}{
		{1001, "open", true}, {1001, "standard", true}, {1001, "locked", true},
		{1002, "open", false}, {1002, "standard", true}, {1002, "locked", true},
		{1003, "open", false}, {1003, "standard", false}, {1003, "locked", true},
		{1004, "locked", false},
	} {
		err := a.Check(Identity{UID: tc.uid, Known: true}, 0, Need{Role: tc.role})
		if (err == nil) != tc.ok {
			t.Errorf("uid %d grants %s: %v, want ok=%v", tc.uid, tc.role, err, tc.ok)
		}
		var ae *ApproverError
		if err != nil && (!errors.As(err, &ae) || !strings.Contains(err.Error(), "no approver role grants role "+tc.role)) {
			t.Errorf("uid %d %s: the refusal does not name the missing grant: %v", tc.uid, tc.role, err)
		}
	}
}

// TestApproversBlock: members by name, group and uid; always answers and
// a rule's approver role need their grants; without any block only the
// workspace owner and root hold them; anyone may answer once.
func TestApproversBlock(t *testing.T) {
	withAccounts(t, map[int][2]string{0: {"root", "root"}, 1000: {"alice", "alice"}, 1001: {"bob", "bob"}})
	a := &Approvers{Set: true, Roles: []ApproverRole{
		{Name: "lead", Members: []string{"alice"}, Grant: []string{"*"}, Always: true},
		{Name: "helper", Members: []string{"uid:1001"}, Grant: []string{"locked"}},
	}}
	alice, bob, eve := Identity{UID: 1000, Known: true}, Identity{UID: 1001, Known: true}, Identity{UID: 1002, Known: true}
	for _, tc := range []struct {
		who  Identity
		need Need
		ok   bool
	}{
		{eve, Need{}, true}, // answering once needs nothing
		{alice, Need{Always: true}, true},
		{bob, Need{Always: true}, false},
		{bob, Need{Role: "locked"}, true},
		{bob, Need{Role: "open"}, false},
		{alice, Need{Role: "open"}, true},
		{bob, Need{Approver: "helper"}, true},
		{bob, Need{Approver: "lead"}, false},
		{alice, Need{Approver: "helper"}, true}, // grant "*" answers every rule's asks
		{Identity{}, Need{Always: true}, false},
	} {
		if err := a.Check(tc.who, 0, tc.need); (err == nil) != tc.ok {
			t.Errorf("%+v %+v: %v, want ok=%v", tc.who, tc.need, err, tc.ok)
		}
	}
	none := &Approvers{}
	if err := none.Check(Identity{UID: 1000, Known: true}, 1000, Need{Role: "open"}); err != nil {
		t.Errorf("the owner without a block: %v", err)
	}
	if err := none.Check(Identity{UID: 0, Known: true}, 1000, Need{Always: true}); err != nil {
		t.Errorf("root without a block: %v", err)
	}
	if err := none.Check(Identity{UID: 1001, Known: true}, 1000, Need{Always: true}); err == nil || !strings.Contains(err.Error(), "only the workspace owner (uid 1000) or root") {
		t.Errorf("another user without a block: %v", err)
	}
}

// TestApproversBadInput: errors name the file and line.
func TestApproversBadInput(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"approvers:\n  lead: {members: ['group:no-such-group-here'], grant: ['*']}", "no such group on this machine"},
		{"approvers:\n  lead: {members: [no-such-user-here], grant: ['*']}", "no such user on this machine"},
		{"approvers:\n  lead: {members: ['uid:x']}", "want uid:NUMBER"},
		{"approvers:\n  lead: {grant: [no-such-role]}", `approvers.lead.grant: no role "no-such-role"`},
		{"approvers:\n  lead: {allow: [x]}", `unknown key "allow"`},
		{"rules:\n  - {decision: ask, command: make, approver: 'a b'}", "not an approver role name"},
	} {
		f := writePolicy(t, "ap.yaml", "version: 1\n"+tc.body+"\n")
		_, err := Load(LoadOptions{Role: "developer", NoUserFile: true, Files: []string{f}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ap.yaml:") {
			t.Errorf("%q: %v, want an error naming ap.yaml and %q", tc.body, err, tc.want)
		}
	}
}
