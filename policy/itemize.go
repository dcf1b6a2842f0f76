package policy

import (
	"strings"

	"github.com/agentbox/agentbox/policy/command"
)

// The command parser (policy/command) turns argv and shell lines into Items.
// These indirections let tests and benchmarks see exactly what the engine
// calls. TEMPORARY: a minimal splitter until policy/command exports
// FromArgv/ParseShell.
var (
	fromArgv   = fallbackFromArgv
	parseShell = fallbackParseShell
)

func fallbackFromArgv(argv []string, cwd string) []command.Item {
	if len(argv) == 0 {
		return nil
	}
	argv = append([]string{baseName(argv[0])}, argv[1:]...)
	if argv[0] == "git" {
		i := 1
		for i < len(argv) && strings.HasPrefix(argv[i], "-") {
			if argv[i] == "-C" || argv[i] == "-c" {
				i++
			}
			i++
		}
		rest := []string{}
		if i < len(argv) {
			rest = argv[i:]
		}
		return []command.Item{{Action: "tool:git:" + strings.Join(rest, " "), Argv: append([]string{"git"}, rest...), Categories: []string{"execute"}}}
	}
	return []command.Item{{Action: "tool:exec:" + strings.Join(argv, " "), Argv: argv, Categories: []string{"execute"}}}
}

func fallbackParseShell(line string) ([]command.Item, error) {
	var items []command.Item
	f := func(r rune) bool { return r == ';' || r == '&' || r == '|' || r == '\n' }
	for _, seg := range strings.FieldsFunc(line, f) {
		w := strings.Fields(seg)
		if len(w) == 0 {
			continue
		}
		items = append(items, fallbackFromArgv(w, "")...)
	}
	return items, nil
}
