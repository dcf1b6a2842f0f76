package load_test

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
	_ "github.com/agentbox/agentbox/policy/formats" // every reader, as agentbox links them
	"github.com/agentbox/agentbox/policy/load"
)

// TestPermissionsWithoutClaudeReader: a program that links no Claude Code
// reader refuses any permissions mapping (it cannot tell Claude Code
// settings from Codelia's, and reading one as the other could allow what
// the file denies); one that links it but not the Codelia and Chorus
// readers refuses their files (never read as another format); with all,
// they load as before.
func TestPermissionsWithoutClaudeReader(t *testing.T) {
	codelia := `{"version": 1, "permissions": {"allow": [{"tool": "read"}], "deny": [{"tool": "bash", "command": "rm"}]}}`
	claude := `{"permissions": {"allow": ["Bash(npm publish:*)"], "deny": ["Read(./secrets/**)"]}}`
	saved := load.SetReaders(nil)
	defer load.SetReaders(saved)
	const noClaude, noCodelia, noChorus = "cannot read Claude Code settings", "cannot read Chorus's or Codelia's permissions", "cannot read Chorus's agent.json"
	for _, linked := range []string{"all", "none", "claude"} {
		var readers []policy.FormatReader
		for _, r := range saved {
			if linked == "all" || linked == "claude" && r.Name() == "claude" {
				readers = append(readers, r)
			}
		}
		load.SetReaders(readers)
		for _, c := range []struct {
			name, text string
			refused    map[string]string // linked -> the refusal
		}{
			{"codelia.json", codelia, map[string]string{"none": noClaude, "claude": noCodelia}},
			{"settings.json", claude, map[string]string{"none": noClaude}},
			{"chorus.json", `{"permissions": "standard"}`, map[string]string{"none": noChorus, "claude": noChorus}},
		} {
			_, err := load.Parse(c.name, []byte(c.text), policy.LayerProject)
			want := c.refused[linked]
			if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
				t.Errorf("linked=%v %s: %v (want refusal %q)", linked, c.name, err, want)
			}
		}
	}
}
