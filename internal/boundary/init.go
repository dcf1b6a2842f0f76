package boundary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// projectTemplate is the commented project policy `init` writes.
const projectTemplate = `# agentbox project policy for this workspace (layer "project").
# It sits above the built-in roles and the user file and below --policy
# files and session answers. Deny rules from any layer always win.
# agentbox refuses to run if this file is writable from inside the sandbox
# or writable by group/others.
version: 1

# rules:
#   # Never let agents push; a human reviews target/ first.
#   - decision: deny
#     command: git push
#     description: pushing is done by a human
#
#   # Running the test suite needs no approval.
#   - decision: allow
#     command: go test
#
#   # Ask before anything touches the network.
#   - decision: ask
#     command: curl
`

// Init creates a workspace at dir — context/ target/ feedback/ agents/ and a
// commented project policy agentbox.yaml — leaving existing parts alone, and
// returns what it created. It refuses a DIR that is a file or an area that is a
// symlink or a file.
func Init(dir string) ([]string, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("init %s: exists and is not a directory", dir)
	}
	var created []string
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("init: %v", err)
		}
		created = append(created, dir)
	}
	for _, a := range Areas {
		p := filepath.Join(dir, a)
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			return created, fmt.Errorf("init: %s is a symlink; areas must be real directories", p)
		case err == nil && !st.IsDir():
			return created, fmt.Errorf("init: %s exists and is not a directory", p)
		case err == nil:
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return created, fmt.Errorf("init: %v", err)
		}
		created = append(created, p+"/")
	}
	pf := filepath.Join(dir, "agentbox.yaml")
	f, err := os.OpenFile(pf, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case errors.Is(err, os.ErrExist):
		return created, nil
	case err != nil:
		return created, fmt.Errorf("init: %v", err)
	}
	if _, err := f.WriteString(projectTemplate); err != nil {
		f.Close()
		return created, fmt.Errorf("init: writing %s: %v", pf, err)
	}
	if err := f.Close(); err != nil {
		return created, fmt.Errorf("init: writing %s: %v", pf, err)
	}
	return append(created, pf), nil
}
