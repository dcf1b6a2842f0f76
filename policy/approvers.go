package policy

import (
	"fmt"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Approvers: who may grant what. An answer to an ask is checked against
// the identity that gave it (a unix uid: the tty's owner, a socket
// client's peer uid, the embedding program's own). Everyone who can reach
// the approver may answer once or deny; answering "always" or "remember",
// a run's role change (agentbox escalate ROLE) and the asks of rules
// marked `approver: NAME` need a grant:
//
//	approvers:
//	  admin:     {members: [root, "group:wheel"], grant: ["*"], always: true}
//	  developer: {members: [alice, "uid:1001"], grant: [developer, readonly], always: true}
//	  viewer:    {members: ["group:staff"], grant: [readonly]}
//
// An approver role's members are unix user names, "group:NAME" and
// "uid:N"; with none given, the unix group of the role's name. `grant`
// names the roles its members may move a run to ("*": any). Chorus's
// server settings ({"permission_grants": {"admin": ["open", ...]}})
// load into the same mapping, members being the group of each name.
// Without any approvers block only the workspace's owner and root hold
// every grant (the seed's "only administrators").

// ApproverRole is one entry of an approvers block.
type ApproverRole struct {
	Name    string   `json:"name"`
	Members []string `json:"members,omitempty"`
	// Grant are the run roles its members may grant ("*" any).
	Grant []string `json:"grant,omitempty"`
	// Always: its members may answer "always" and "remember".
	Always bool   `json:"always,omitempty"`
	Source string `json:"source"`
}

// Approvers is the merged approvers mapping of a policy's layers.
type Approvers struct {
	Roles []ApproverRole `json:"roles,omitempty"`
	// Set reports whether any layer had an approvers block.
	Set bool `json:"set"`
}

// Need is what an answer must be backed by.
type Need struct {
	// Role is a run role the answer moves the run to ("" none).
	Role string
	// Always: the answer is "always" or "remember".
	Always bool
	// Approver is the approver role the rule's asks need ("" none).
	Approver string
}

func (n Need) none() bool { return n.Role == "" && !n.Always && n.Approver == "" }

// Identity is who answered.
type Identity struct {
	UID int
	// Known is false when the answer carries no uid.
	Known bool
}

// ApproverError refuses an answer: the identity lacks the grant named.
type ApproverError struct {
	Who     string
	Missing string
}

func (e *ApproverError) Error() string {
	return fmt.Sprintf("%s may not give this answer: %s", e.Who, e.Missing)
}

// Check reports whether id may give an answer needing n; owner is the
// workspace owner's uid (without an approvers block, the owner and root
// hold every grant).
func (a *Approvers) Check(id Identity, owner int, n Need) error {
	if n.none() {
		return nil
	}
	who := "an approver of unknown identity"
	if id.Known {
		who = "uid " + strconv.Itoa(id.UID)
		if u, err := user.LookupId(strconv.Itoa(id.UID)); err == nil {
			who = u.Username + " (uid " + strconv.Itoa(id.UID) + ")"
		}
	}
	if a == nil || !a.Set {
		if id.Known && (id.UID == owner || id.UID == 0) {
			return nil
		}
		return &ApproverError{Who: who, Missing: "with no approvers block only the workspace owner (uid " + strconv.Itoa(owner) + ") or root may " + n.what()}
	}
	if !id.Known {
		return &ApproverError{Who: who, Missing: "no identity to look up in the approvers block"}
	}
	held := a.rolesOf(id.UID)
	if n.Approver != "" && !slices.Contains(held, n.Approver) && !a.grantsAll(held) {
		return &ApproverError{Who: who, Missing: "the rule's asks need approver role " + n.Approver + " (held: " + list(held) + ")"}
	}
	if n.Always && !slices.ContainsFunc(a.Roles, func(r ApproverRole) bool { return r.Always && slices.Contains(held, r.Name) }) {
		return &ApproverError{Who: who, Missing: "no approver role with always: true (held: " + list(held) + ")"}
	}
	if n.Role != "" && !slices.ContainsFunc(a.Roles, func(r ApproverRole) bool {
		return slices.Contains(held, r.Name) && (slices.Contains(r.Grant, "*") || slices.Contains(r.Grant, n.Role))
	}) {
		return &ApproverError{Who: who, Missing: "no approver role grants role " + n.Role + " (held: " + list(held) + ")"}
	}
	return nil
}

func (n Need) what() string {
	switch {
	case n.Role != "":
		return "grant role " + n.Role
	case n.Approver != "":
		return "answer asks of approver role " + n.Approver
	}
	return "answer always or remember"
}

func list(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func (a *Approvers) grantsAll(held []string) bool {
	return slices.ContainsFunc(a.Roles, func(r ApproverRole) bool {
		return slices.Contains(held, r.Name) && slices.Contains(r.Grant, "*")
	})
}

// accountOf returns uid's user name ("" unknown) and group names, from
// the user and group databases (a variable: tests stand in other
// directories).
var accountOf = func(uid int) (name string, groups []string) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", nil
	}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if gr, err := user.LookupGroupId(g); err == nil {
				groups = append(groups, gr.Name)
			}
		}
	}
	return u.Username, groups
}

// rolesOf lists the approver roles uid holds.
func (a *Approvers) rolesOf(uid int) []string {
	name, groups := accountOf(uid)
	var out []string
	for _, r := range a.Roles {
		members := r.Members
		if len(members) == 0 {
			members = []string{"group:" + r.Name}
		}
		for _, m := range members {
			ok := false
			switch {
			case strings.HasPrefix(m, "uid:"):
				ok = m == "uid:"+strconv.Itoa(uid)
			case strings.HasPrefix(m, "group:"):
				ok = slices.Contains(groups, m[len("group:"):])
			default:
				ok = name != "" && name == m
			}
			if ok {
				out = append(out, r.Name)
				break
			}
		}
	}
	return out
}

// UIDs lists the uids the members name (users and uid: entries; a group's
// members as the group database lists them): the approval socket lets
// them connect.
func (a *Approvers) UIDs() []int {
	if a == nil {
		return nil
	}
	var out []int
	add := func(s string) {
		if n, err := strconv.Atoi(s); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, r := range a.Roles {
		for _, m := range r.Members {
			switch {
			case strings.HasPrefix(m, "uid:"):
				add(m[len("uid:"):])
			case strings.HasPrefix(m, "group:"):
			default:
				if u, err := user.Lookup(m); err == nil {
					add(u.Uid)
				}
			}
		}
	}
	sort.Ints(out)
	return out
}

// mergeApprovers merges the layers' blocks: a later layer's role of the
// same name replaces an earlier one's.
func mergeApprovers(defs []*fileDef) *Approvers {
	a := &Approvers{}
	for _, fd := range defs {
		if fd.untrusted || !fd.hasApprovers {
			continue
		}
		a.Set = true
		for _, r := range fd.approvers {
			if i := slices.IndexFunc(a.Roles, func(x ApproverRole) bool { return x.Name == r.Name }); i >= 0 {
				a.Roles[i] = r
			} else {
				a.Roles = append(a.Roles, r)
			}
		}
	}
	return a
}

// Approvers is the policy's merged approvers mapping (never nil).
func (e *Engine) Approvers() *Approvers {
	if e.approvers == nil {
		return &Approvers{}
	}
	return e.approvers
}
