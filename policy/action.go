package policy

import (
	"fmt"
	"strings"
)

// Tools that action strings name (docs/policy.md, "Actions"). Other tool names are accepted
// and matched literally by rules.
const (
	ToolExec       = "exec"        // one program start: tool:exec:<argv, shell-quoted>
	ToolGit        = "git"         // a git exec after global options: tool:git:<subcommand> <args>
	ToolBash       = "bash"        // a whole shell line: tool:bash:<line>
	ToolView       = "view"        // read a file: tool:view:<path>
	ToolCreateFile = "create_file" // create or overwrite a file
	ToolStrReplace = "str_replace" // edit a file
	ToolDelete     = "delete"      // delete a file
	ToolSelfEdit   = "self_edit"   // change the agent's own prompt, policy or model
	// ToolOverwrite is a write that replaces an existing file's content
	// (`> f`, cp/mv/install/ln -f onto f, sed -i, tee without -a): added
	// by the engine beside the create_file item when the caller's
	// ExecContext.Exists says the file is there and a rule names the tool.
	ToolOverwrite = "overwrite"
)

// ParseAction splits an action string "tool:<tool>:<detail>" into its tool
// name and detail. The detail may be empty and may contain colons. A missing
// second colon ("tool:bash") means an empty detail. The tool name must be
// non-empty and may not contain spaces.
func ParseAction(action string) (tool, detail string, err error) {
	rest, ok := strings.CutPrefix(action, "tool:")
	if !ok {
		return "", "", fmt.Errorf("invalid action %q: must start with \"tool:\" (format tool:<tool>:<detail>)", clip(action))
	}
	tool, detail, _ = strings.Cut(rest, ":")
	if tool == "" {
		return "", "", fmt.Errorf("invalid action %q: empty tool name (format tool:<tool>:<detail>)", clip(action))
	}
	for i := 0; i < len(tool); i++ {
		if c := tool[i]; c <= ' ' || c == 0x7f {
			return "", "", fmt.Errorf("invalid action %q: tool name contains whitespace or control characters", clip(action))
		}
	}
	return tool, detail, nil
}

// FormatAction builds the action string for tool and detail (Chorus'
// format_action).
func FormatAction(tool, detail string) string { return "tool:" + tool + ":" + detail }

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Category bits (Forge's permission categories).
type catSet uint8

const (
	catRead catSet = 1 << iota
	catWrite
	catExecute
	catNetwork
	catDestructive
)

// parseCategory accepts "read" and Forge's "read_operations" spellings.
func parseCategory(s string) (catSet, bool) {
	switch strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "_operations") {
	case "read":
		return catRead, true
	case "write":
		return catWrite, true
	case "execute", "exec":
		return catExecute, true
	case "network":
		return catNetwork, true
	case "destructive":
		return catDestructive, true
	}
	return 0, false
}

func catNames(c catSet) []string {
	var out []string
	for _, n := range []string{"read", "write", "execute", "network", "destructive"} {
		b, _ := parseCategory(n)
		if c&b != 0 {
			out = append(out, n)
		}
	}
	return out
}

// toolCategories is the category of an action by tool alone.
func toolCategories(tool string) catSet {
	switch tool {
	case ToolView, "read", "grep", "glob", "glob_search":
		return catRead
	case ToolCreateFile, ToolStrReplace, "write", "edit":
		return catWrite
	case ToolDelete, ToolOverwrite:
		return catWrite | catDestructive
	case ToolExec, ToolGit, ToolBash:
		return catExecute
	case "web_fetch", "fetch", "web_search":
		return catNetwork
	}
	return 0
}

func isCommandTool(tool string) bool { return tool == ToolExec || tool == ToolGit || tool == ToolBash }

func isPathTool(tool string) bool {
	switch tool {
	case ToolView, ToolCreateFile, ToolStrReplace, ToolDelete, ToolOverwrite:
		return true
	}
	return false
}

// subject is one thing being decided: a command Item or a whole action.
type subject struct {
	action string // primary action string
	tool   string
	detail string
	words  []string // argv for exec/git subjects (git: starts with "git")
	cats   catSet
	// cmdline is the command text Codelia globs match: detail for exec and
	// bash, "git "+detail for git (built lazily; see cmdText).
	cmdline string
	hasCmd  bool
	// progAbs is the program location of an exec subject (absolute; ""
	// if unknown) and progRel its workspace-relative form ("" outside the
	// workspace); `program:` rules match them. See program.go.
	progAbs, progRel string
}

func (s *subject) setProgram(e *Engine, loc string) {
	if loc == "" || s.tool != ToolExec {
		return
	}
	s.progAbs, s.progRel = loc, e.programRel(loc)
}

// cmdText is the command line Codelia globs and the tool:bash view match.
func (s *subject) cmdText() string {
	if !s.hasCmd {
		if s.tool == ToolGit {
			s.cmdline = "git " + s.detail
		} else {
			s.cmdline = s.detail
		}
		s.hasCmd = true
	}
	return s.cmdline
}

// program returns the base name of argv[0], or "".
func (s *subject) program() string {
	if len(s.words) == 0 {
		return ""
	}
	return baseName(s.words[0])
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
