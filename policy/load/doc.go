// Package load owns reading agentbox's policy files: which files a load
// reads (the user file, the project's agentbox.yaml, the --policy files,
// and the permission files of other agent tools that discovery finds:
// discover.go), agentbox's own format (parse.go: rules, roles with their
// Chorus-style allow:/ask: lists, network, limits, checkpoints, agent
// profiles, approvers and program rights: agents.go), the permissions
// and ownership a policy file must have (perms.go), and the registry of
// the foreign formats' readers (formats.go), which each read their own
// files (internal/policyfmt/..., linked by importing policy/formats).
//
// It describes each file as a policy.Document — rules compiled by
// policy.RuleSet.Add, as a foreign format's are — and the core compiles
// the documents with the built-in roles into an Engine (Policy, or Read
// then policy.Layers' methods: Engine, Roles, Agents, RoleRules). The
// built-in roles are policy/roles.yaml as this package reads it and the
// core compiles it, kept as Go literals in policy/roles_gen.go (`go
// generate ./policy`), so a launch neither scans YAML nor compiles them.
//
// It imports the decision core (policy) and never a format or the
// presentation packages; the core never imports it (arch_test.go).
package load
