package policy

import (
	"regexp"
	"slices"
	"strings"
)

// Grants are what one run adds to its role's policy for its own duration:
// the run's flags and options (--allow-host, --exec, --rw, a network block
// given through the Go API), the toolchains discovered on PATH and an
// agent profile's install, API hosts and shell snapshots. They are rules
// of the session layer: a deny of any layer still wins.
type Grants struct {
	Hosts    []HostGrant
	Programs []PathGrant // programs whose file lies under Dirs are allowed
	Sources  []PathGrant // files directly in Dirs may be sourced by a shell
	// SourceFiles may be sourced by a shell, by path or as $HOME/REL.
	SourceFiles []SourceFileGrant
	Writes      []PathGrant // the file tools may write under Dirs
}

// HostGrant decides connections to host patterns (network mode proxy).
type HostGrant struct {
	Decision Decision
	Source   string // the flag or option it came from, for the audit log
	Patterns []string
}

// SourceFileGrant lets a shell source files of the agent's HOME.
type SourceFileGrant struct {
	Source string
	Home   string   // the agent's HOME
	Rel    []string // files relative to it
}

// PathGrant names absolute directories granted by Source; Why says in
// the audit log what they are ("a program of a toolchain discovered on
// PATH", "a directory named with --exec").
type PathGrant struct {
	Source string
	Why    string
	Dirs   []string
}

// Empty reports whether g grants nothing.
func (g Grants) Empty() bool {
	return len(g.Hosts)+len(g.Programs)+len(g.Sources)+len(g.SourceFiles)+len(g.Writes) == 0
}

// GrantError is a grant WithGrants could not compile: its source (the
// flag or option), the pattern or directory, and why.
type GrantError struct {
	Source, Value string
	Err           error
}

func (e *GrantError) Error() string { return e.Source + " " + e.Value + ": " + e.Err.Error() }
func (e *GrantError) Unwrap() error { return e.Err }

// WithGrants returns a new engine: e's rules plus g's, with a session of
// its own. e is not changed. An invalid host pattern or directory is an
// error naming it.
func (e *Engine) WithGrants(g Grants) (*Engine, error) {
	n := *e
	n.rules = slices.Clone(e.rules)
	n.info.Network.Allow = slices.Clone(e.info.Network.Allow)
	n.info.Network.Ask = slices.Clone(e.info.Network.Ask)
	n.info.Network.Deny = slices.Clone(e.info.Network.Deny)
	n.sess = &Session{}
	add := func(r *rule, source, key string) {
		r.order = 1 << 30
		r.ref = RuleRef{ID: "session:" + strings.TrimPrefix(source, "--") + ":" + key, Layer: LayerSession, Source: source}
		r.finish()
		n.rules = append(n.rules, r)
	}
	for _, h := range g.Hosts {
		for _, p := range h.Patterns {
			hp, err := compileHostPattern(p)
			if err != nil {
				return nil, &GrantError{h.Source, p, err}
			}
			add(&rule{dec: h.Decision, host: hp, tools: []string{ToolNet}, desc: h.Decision.String() + " for this run (" + h.Source + ")"}, h.Source, p)
			switch h.Decision {
			case Allow:
				n.info.Network.Allow = append(n.info.Network.Allow, p)
			case Ask:
				n.info.Network.Ask = append(n.info.Network.Ask, p)
			default:
				n.info.Network.Deny = append(n.info.Network.Deny, p)
			}
		}
	}
	for _, pg := range g.Programs {
		why := pg.Why
		if why == "" {
			why = "a program granted for this run"
		}
		for _, d := range pg.Dirs {
			gl, err := compileProgramGlob(strings.TrimSuffix(d, "/") + "/**")
			if err != nil {
				return nil, &GrantError{pg.Source, d, err}
			}
			add(&rule{dec: Allow, prog: gl, cmdOnly: true, desc: why + " (" + pg.Source + ")"}, pg.Source, d)
		}
	}
	for _, sg := range g.Sources {
		for _, d := range sg.Dirs {
			for _, verb := range []string{"source", `\.`} {
				// the literal prefix (verb and directory) makes the rule
				// specific enough to lift source's ask floor
				re, err := compileFullRegex(`tool:exec:` + verb + ` ` + regexp.QuoteMeta(strings.TrimSuffix(d, "/")) + `/[A-Za-z0-9._+-]+`)
				if err != nil {
					return nil, &GrantError{sg.Source, d, err}
				}
				add(&rule{dec: Allow, act: newActMatch(re, nil), desc: "the agent's own shell snapshot, sourced by its shell tool (" + sg.Source + ")"}, sg.Source, d)
			}
		}
	}
	for _, sf := range g.SourceFiles {
		for _, rel := range sf.Rel {
			rel = strings.Trim(rel, "/")
			// The file by its path, and as a shell tool writes it; HOME is
			// the agent's unless the agent changed it, and then the file is
			// as much the agent's own. One literal rule per spelling: the
			// literal text makes each specific enough to lift source's ask.
			spellings := []string{strings.TrimSuffix(sf.Home, "/") + "/" + rel, `"$HOME/` + rel + `"`, `$HOME/` + rel,
				`"${HOME}/` + rel + `"`, `${HOME}/` + rel, `~/` + rel}
			for _, verb := range []string{"source", "."} {
				for _, sp := range spellings {
					re, err := compileFullRegex(regexp.QuoteMeta(`tool:exec:` + verb + ` ` + sp))
					if err != nil {
						return nil, &GrantError{sf.Source, rel, err}
					}
					add(&rule{dec: Allow, act: newActMatch(re, nil), desc: "a file the agent's shell tool sources at start-up (" + sf.Source + ")"}, sf.Source, rel)
				}
			}
		}
	}
	for _, wg := range g.Writes {
		for _, d := range wg.Dirs {
			d = strings.TrimSuffix(d, "/")
			for _, tool := range []string{ToolCreateFile, ToolStrReplace} {
				gl, err := compileGlob("tool:" + tool + ":" + d + "/*")
				if err != nil {
					return nil, &GrantError{wg.Source, d, err}
				}
				add(&rule{dec: Allow, act: newActMatch(nil, gl), desc: "granted writable for this run (" + wg.Source + ")"}, wg.Source, d)
			}
		}
	}
	n.index()
	return &n, nil
}
