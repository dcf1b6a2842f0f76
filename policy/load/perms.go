package load

import (
	"fmt"
	"os"
	"syscall"
)

// CheckFilePerms refuses policy files that someone other than us (or root)
// could have written: they are a privilege boundary, like ~/.ssh/config.
func CheckFilePerms(path string, fi os.FileInfo) error {
	if fi.Mode()&0o022 != 0 {
		return fmt.Errorf("%s: refusing policy file writable by group or others (mode %04o); run: chmod go-w %s", path, fi.Mode().Perm(), path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if st.Uid != 0 && int(st.Uid) != os.Getuid() {
			// Typically `sudo agentbox run` on a user's workspace: root
			// will not trust a file its user could rewrite mid-run.
			return fmt.Errorf("%s: refusing policy file owned by uid %d (only root or uid %d may own it); run: sudo chown root %s (or run agentbox as uid %d)", path, st.Uid, os.Getuid(), path, st.Uid)
		}
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: policy file is not a regular file", path)
	}
	return nil
}
