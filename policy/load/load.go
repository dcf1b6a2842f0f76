package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/policy"
)

// Policy reads the policy layers opts names and compiles the role
// opts.Role selects with them into an Engine: Read, then
// Layers.Engine. Every problem in every file is reported (as
// policy.Errors, one per line naming file:line); nothing is half-loaded.
func Policy(opts policy.LoadOptions) (*policy.Engine, error) {
	if opts.Role == "" {
		return nil, errors.New("no role selected (use --role; see `agentbox roles`)")
	}
	l, err := Read(opts)
	if err != nil {
		return nil, err
	}
	return l.Engine()
}

// Read reads every policy layer opts names (the user file, the project
// file, the files discovery finds, the --policy files; opts.Role is not
// needed) into documents, and checks them with the built-in roles
// (Layers.Check): the error lists every problem in every file.
func Read(opts policy.LoadOptions) (*policy.Layers, error) {
	l := &policy.Layers{Options: opts, WouldRead: func() []string { return wouldRead(opts) }}
	for _, lf := range layerFiles(opts) {
		if lf.optional {
			if _, err := os.Stat(lf.path); errors.Is(err, os.ErrNotExist) {
				continue
			}
		}
		l.Documents = append(l.Documents, readLayer(opts, lf))
	}
	return l, l.Check()
}

// readLayer reads one layer's file; what is wrong with it is in the
// document's Problems.
func readLayer(opts policy.LoadOptions, lf layerFile) *policy.Document {
	data, err := readPolicyFile(lf.path)
	if err != nil {
		return &policy.Document{Path: lf.path, Layer: lf.layer, Problems: []error{err}}
	}
	fd, errs := parseFile(lf.path, data, lf.layer)
	if fd == nil {
		return &policy.Document{Path: lf.path, Layer: lf.layer, Problems: errs}
	}
	fd.Problems = errs
	if lf.discovered {
		fd.Discovered = true
		fd.Untrusted = opts.Untrusted != nil && opts.Untrusted(lf.path)
		if fd.Format == "agentbox" && (fd.Rules != nil && fd.Rules.Len() > 0 || len(fd.Roles) > 0 || fd.Default != nil) {
			err := fmt.Errorf("%s: found where another tool keeps its permissions, but it is in agentbox's own format; move it to agentbox.yaml or --policy", lf.path)
			return &policy.Document{Path: lf.path, Layer: lf.layer, Problems: []error{err}}
		}
	}
	return fd
}

// Parse reads data as the policy file at path would be read at layer, and
// returns it with every problem in it (as policy.Errors; the document is
// nil when the file does not decode). At policy.LayerRole it reads the
// built-in roles (policy/roles.yaml: rules are named after their
// command, sources are builtin:ROLE), as the generator of
// policy/roles_gen.go does.
func Parse(path string, data []byte, layer policy.Layer) (*policy.Document, error) {
	fd, errs := parseFile(path, data, layer)
	if fd != nil {
		fd.Problems = errs
	}
	if len(errs) > 0 {
		return fd, policy.Errors(errs)
	}
	return fd, nil
}

// defaultUserFile returns $XDG_CONFIG_HOME/agentbox/policy.yaml, falling back
// to ~/.config/agentbox/policy.yaml; "" if neither can be determined.
func defaultUserFile() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", "policy.yaml")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "agentbox", "policy.yaml")
	}
	return ""
}

// layerFile is one file a load reads, at its layer.
type layerFile struct {
	path       string
	layer      policy.Layer
	optional   bool
	discovered bool // found by discovery (another tool's file)
}

// layerFiles are the files a load with opts reads, lowest layer first:
// the user file, the project file, what discovery finds, the --policy
// files.
func layerFiles(opts policy.LoadOptions) []layerFile {
	var out []layerFile
	if !opts.NoUserFile {
		if opts.UserFile != "" {
			out = append(out, layerFile{path: opts.UserFile, layer: policy.LayerUser})
		} else if f := defaultUserFile(); f != "" {
			out = append(out, layerFile{path: f, layer: policy.LayerUser, optional: true})
		}
	}
	if opts.Workspace != "" {
		out = append(out, layerFile{path: policy.ProjectFile(opts.Workspace), layer: policy.LayerProject, optional: true})
	}
	if opts.Discover {
		out = append(out, discovered(opts)...)
	}
	for _, f := range opts.Files {
		out = append(out, layerFile{path: f, layer: policy.LayerFile})
	}
	return out
}

// Files reads paths as --policy layers and nothing else (no user,
// project or discovered file): what `agentbox policy validate` checks and
// lints. The error lists every problem in every file.
func Files(paths ...string) (*policy.Layers, error) {
	return Read(policy.LoadOptions{NoUserFile: true, Files: paths})
}
