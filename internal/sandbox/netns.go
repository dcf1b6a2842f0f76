//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"

	"github.com/agentbox/agentbox/internal/sandbox/helper"
	"golang.org/x/sys/unix"
)

// Egress through the proxy: the helper moves the sandbox into a network
// namespace of its own, where nothing but loopback exists, brings loopback
// up, creates the proxy's listening socket there (127.0.0.1:ProxyPort) and
// hands it to the launcher over a unix socket (SCM_RIGHTS). A socket stays
// in the namespace it was made in, so the launcher accepts the sandbox's
// connections while dialing out from the host's namespace: a process that
// ignores the proxy variables reaches nothing — no route, no other
// address, not the proxy's port on another address. As root the namespace
// is created directly; as a regular user inside a user namespace of its
// own (uid and gid mapped to themselves).

// ProxyPort is the proxy's port inside the sandbox's network namespace.
const ProxyPort = helper.ProxyPort

// socketPair returns the two ends of a close-on-exec SOCK_SEQPACKET pair
// for passing descriptors out of the helper: the launcher's and the
// helper's.
func socketPair(name string) (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name+"-helper"), nil
}

// recvFds receives the n descriptors the helper sent on f; what names
// them in errors, gone says what the helper had not done when it ended.
func recvFds(f *os.File, n int, what, gone string) ([]int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*n))
	got, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receiving the %s: %w", what, err)
	}
	if got == 0 {
		return nil, fmt.Errorf("the helper ended before %s", gone)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receiving the %s: no descriptor", what)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != n {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receiving the %s: want %d descriptors, got %d", what, n, len(fds))
	}
	return fds, nil
}

// recvFd receives the exec-notification listener the helper sent on f.
func recvFd(f *os.File) (int, error) {
	fds, err := recvFds(f, 1, "exec notification listener", "installing the exec notification filter")
	if err != nil {
		return -1, err
	}
	return fds[0], nil
}

// recvListeners receives the helper's n listeners on the launcher's end.
func recvListeners(f *os.File, n int) ([]net.Listener, error) {
	fds, err := recvFds(f, n, "proxy listener", "creating the network namespace")
	if err != nil {
		return nil, err
	}
	var out []net.Listener
	for _, fd := range fds {
		lf := os.NewFile(uintptr(fd), "agentbox-listener")
		ln, err := net.FileListener(lf)
		lf.Close()
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, err
		}
		out = append(out, ln)
	}
	return out, nil
}
