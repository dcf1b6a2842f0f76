package load

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentbox/agentbox/policy"
)

// Where other agent tools keep their permission files, each loaded in its
// own format when LoadOptions.Discover is set:
//
//	user layer (the HOME):
//	  ~/.claude/settings.json                         Claude Code
//	  $CODEX_HOME/rules/*.rules (~/.codex), policy/*.codexpolicy   Codex execpolicy
//	  $CODELIA_CONFIG_PATH or ~/.codelia/config.json  Codelia
//	  $XDG_CONFIG_HOME/forge/permissions.json         Forge (FR-5.1)
//	project layer (the workspace root, then the project directory):
//	  .claude/settings.json, .claude/settings.local.json
//	  .codex/rules/*.rules
//	  .codelia/config.json
//	  .src/forge/permissions.json                     Forge (FR-5.2)
//	  agent.json with "permissions"                   Chorus
func discovered(opts policy.LoadOptions) []layerFile {
	var out []layerFile
	add := func(path string, layer policy.Layer) {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			for _, f := range out {
				if f.path == path {
					return
				}
			}
			out = append(out, layerFile{path: path, layer: layer, optional: true, discovered: true})
		}
	}
	for _, c := range candidates(opts) {
		switch {
		case c.glob:
			m, _ := filepath.Glob(c.path)
			sort.Strings(m)
			for _, f := range m {
				add(f, c.layer)
			}
		case filepath.Base(c.path) == "agent.json":
			if b, err := os.ReadFile(c.path); err == nil && bytes.Contains(b, []byte(`"permissions"`)) {
				add(c.path, c.layer)
			}
		default:
			add(c.path, c.layer)
		}
	}
	return out
}

// candidate is a place discovery looks for another tool's policy file.
type candidate struct {
	path  string // a file, or a glob pattern when glob
	layer policy.Layer
	glob  bool
}

// candidates are the places discovery looks, whether or not anything is
// there.
func candidates(opts policy.LoadOptions) []candidate {
	var out []candidate
	add := func(path string, layer policy.Layer) { out = append(out, candidate{path: path, layer: layer}) }
	glob := func(pattern string, layer policy.Layer) {
		out = append(out, candidate{path: pattern, layer: layer, glob: true})
	}
	home := opts.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" && !opts.NoUserFile {
		add(filepath.Join(home, ".claude", "settings.json"), policy.LayerUser)
		codexHome := os.Getenv("CODEX_HOME")
		if codexHome == "" || opts.Home != "" {
			codexHome = filepath.Join(home, ".codex")
		}
		glob(filepath.Join(codexHome, "rules", "*.rules"), policy.LayerUser)
		glob(filepath.Join(codexHome, "policy", "*.codexpolicy"), policy.LayerUser)
		if p := os.Getenv("CODELIA_CONFIG_PATH"); p != "" && opts.Home == "" {
			add(p, policy.LayerUser)
		} else {
			add(filepath.Join(home, ".codelia", "config.json"), policy.LayerUser)
		}
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if cfg == "" || opts.Home != "" {
			cfg = filepath.Join(home, ".config")
		}
		add(filepath.Join(cfg, "forge", "permissions.json"), policy.LayerUser)
	}
	var dirs []string
	if opts.Workspace != "" {
		dirs = append(dirs, opts.Workspace)
	}
	if opts.ProjectDir != "" && opts.ProjectDir != opts.Workspace {
		dirs = append(dirs, opts.ProjectDir)
	}
	for _, d := range dirs {
		add(filepath.Join(d, ".claude", "settings.json"), policy.LayerProject)
		add(filepath.Join(d, ".claude", "settings.local.json"), policy.LayerProject)
		glob(filepath.Join(d, ".codex", "rules", "*.rules"), policy.LayerProject)
		add(filepath.Join(d, ".codelia", "config.json"), policy.LayerProject)
		add(filepath.Join(d, ".src", "forge", "permissions.json"), policy.LayerProject)
		add(filepath.Join(d, "agent.json"), policy.LayerProject)
	}
	return out
}

// wouldRead lists every place a load with opts, or a later one without
// --no-user-policy or --no-discover, would read a policy layer from
// (Read hands it to the core: Engine.WouldRead),
// whether or not a file is there now: the user file, the project file,
// the --policy files and the other tools' files (for a pattern, its
// directory). A run refuses grants that let the
// sandbox write any of them: a file the agent creates there would be
// trusted by the next run.
func wouldRead(opts policy.LoadOptions) []string {
	var out []string
	for _, f := range layerFiles(opts) {
		out = append(out, f.path)
	}
	// A later run may load the user layers this one skips.
	if f := defaultUserFile(); f != "" {
		out = append(out, f)
	}
	// A later run may discover what this one does not look for.
	all := opts
	all.NoUserFile = false
	for _, c := range candidates(all) {
		p := c.path
		if c.glob {
			p = filepath.Dir(p)
		}
		out = append(out, p)
	}
	return out
}
