package plan

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// guideName is the file in the agent's HOME that explains the boundary, so
// an agent meeting "Permission denied" or "agentbox: denied" can tell a
// sandbox from a broken machine and adapt.
const guideName = "AGENTBOX.md"

// GuideText is what the agent reads: what it may do, and how to ask the
// policy instead of guessing.
func (pl *Plan) GuideText() string {
	p := pl.Boundary
	var b strings.Builder
	fmt.Fprintf(&b, "# You are running inside agentbox\n\n%s\n\n", strings.TrimPrefix(pl.summary(false), "agentbox: "))
	fmt.Fprintf(&b, "- Write your work in %s (target/) and notes in %s (feedback/).\n", p.Target, p.Feedback)
	fmt.Fprintf(&b, "- %s (context/) is read-only; files outside the workspace are not readable except system paths.\n", p.Context)
	fmt.Fprintf(&b, "- Your HOME, TMPDIR and caches are in %s.\n", p.OwnAgent)
	b.WriteString("- \"Permission denied\" (EACCES/EPERM) on a path outside those areas is the kernel boundary, not a broken machine.\n")
	b.WriteString("- A program refused with \"agentbox: denied: ... (rule X)\" was decided by the role's policy; do not retry it in another spelling.\n")
	for _, sc := range pl.Secrets {
		fmt.Fprintf(&b, "- $%s holds a placeholder, not the credential: agentbox puts the real value into requests to %s (use the variable as usual); sent anywhere else it is refused.\n", sc.Name, strings.Join(sc.Hosts, ", "))
	}
	b.WriteString("- Ask before you try: `agentbox check -- CMD ARGS` or `agentbox check --shell 'LINE'` (exit 0 allow, 3 ask, 4 deny),\n  `agentbox explain --shell 'LINE'` says which rule decides and why.\n")
	return b.String()
}

// WriteGuide writes the guide into the agent's HOME without following a
// symlink the sandboxed code may have put there (agentbox may be root).
func (pl *Plan) WriteGuide() error {
	dir, err := openHomeDir(pl.Boundary.Home, "", false)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return writeHomeFile(dir, pl.Boundary.Home, guideName, pl.GuideText())
}

// writeHomeFile replaces name in the directory dir (at path, for
// messages) with text. The agent may have planted anything there — a
// symlink, a FIFO (opening it would block the launch), a hard link to a
// file elsewhere (truncating it would change that file): the text goes
// into a new file created with O_EXCL next to it, which is renamed over
// the name, so whatever was there is replaced and never opened. A file
// that already holds text is left as it is: rewriting it costs ~0.4 ms of
// every launch.
func writeHomeFile(dir int, path, name, text string) error {
	if homeFileHolds(dir, name, text) {
		return nil
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", path, name, err)
	}
	_, werr := unix.Write(fd, []byte(text))
	if cerr := unix.Close(fd); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, name)
	}
	if werr != nil {
		unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("%s/%s: %w", path, name, werr)
	}
	return nil
}

// homeFileHolds reports whether name in dir is a plain file with one link
// whose content is exactly text (the checks writeHomeFile makes).
func homeFileHolds(dir int, name, text string) bool {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Size != int64(len(text)) {
		return false
	}
	buf := make([]byte, len(text)+1) // one more: a file that grew meanwhile differs
	n, err := unix.Read(fd, buf)
	return err == nil && string(buf[:n]) == text
}
