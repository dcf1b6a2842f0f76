//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"

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
const ProxyPort = 3128

// helperNetFd is the helper's end of the socket the listener goes out on.
const helperNetFd = 6

// enterNetNS puts the calling thread's process into a new network
// namespace with loopback up, and returns the proxy listener's fd.
func enterNetNS() (int, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return -1, fmt.Errorf("network namespace: %w", err)
		}
	} else {
		if err := unix.Unshare(unix.CLONE_NEWUSER | unix.CLONE_NEWNET); err != nil {
			return -1, fmt.Errorf("user and network namespace: %w (unprivileged user namespaces disabled?)", err)
		}
		for _, w := range [][2]string{
			{"/proc/self/setgroups", "deny"},
			{"/proc/self/uid_map", strconv.Itoa(uid) + " " + strconv.Itoa(uid) + " 1"},
			{"/proc/self/gid_map", strconv.Itoa(gid) + " " + strconv.Itoa(gid) + " 1"},
		} {
			if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
				return -1, fmt.Errorf("user namespace: %s: %w", w[0], err)
			}
		}
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return -1, err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return -1, fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return -1, fmt.Errorf("bringing loopback up: %w", err)
	}
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("proxy listener: %w", err)
	}
	unix.SetsockoptInt(l, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(l, &unix.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(l)
		return -1, fmt.Errorf("proxy listener: bind 127.0.0.1:%d: %w", ProxyPort, err)
	}
	if err := unix.Listen(l, 128); err != nil {
		unix.Close(l)
		return -1, fmt.Errorf("proxy listener: %w", err)
	}
	return l, nil
}

// sendListener passes the listener to the launcher and closes the
// helper's copy (the sandbox must not accept on it).
func sendListener(l int) error {
	defer unix.Close(l)
	if err := unix.Sendmsg(helperNetFd, []byte{1}, unix.UnixRights(l), nil, 0); err != nil {
		return fmt.Errorf("passing the proxy listener out: %w", err)
	}
	unix.Close(helperNetFd)
	return nil
}

// recvListener receives the helper's listener on the launcher's end.
func recvListener(f *os.File) (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, 0)
	if err != nil {
		return nil, fmt.Errorf("receiving the proxy listener: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("the helper ended before creating the network namespace")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receiving the proxy listener: no descriptor")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receiving the proxy listener: no descriptor")
	}
	lf := os.NewFile(uintptr(fds[0]), "agentbox-proxy-listener")
	defer lf.Close()
	return net.FileListener(lf)
}
