//go:build linux

package helper

import (
	"fmt"

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

// enterNetNS puts the calling thread's process into a new network
// namespace with loopback up, and returns the proxy listener's fd.
func enterNetNS() (int, error) {
	if err := isolateNet(); err != nil {
		return -1, err
	}
	return loopbackListener(ProxyPort)
}

// isolateNet puts the calling thread's process into a new network
// namespace with only loopback, up. Abstract unix sockets belong to a
// network namespace too: the host's are out of reach from it.
func isolateNet() error {
	// A regular user's helper runs in a user namespace of its own already
	// (spawn.go), so this is the same call for root and for it.
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing loopback up: %w", err)
	}
	return nil
}

// loopbackListener listens on 127.0.0.1:port in the current network
// namespace.
func loopbackListener(port uint16) (int, error) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("listener: %w", err)
	}
	unix.SetsockoptInt(l, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(l, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(l)
		return -1, fmt.Errorf("listener: bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(l, 128); err != nil {
		unix.Close(l)
		return -1, fmt.Errorf("listener on port %d: %w", port, err)
	}
	return l, nil
}

// sendListeners passes the listeners (the proxy's first, then the
// forwarded ports') to the launcher and closes the helper's copies (the
// sandbox must not accept on them).
func sendListeners(ls []int) error {
	defer func() {
		for _, l := range ls {
			unix.Close(l)
		}
	}()
	if err := unix.Sendmsg(NetFd, []byte{1}, unix.UnixRights(ls...), nil, 0); err != nil {
		return fmt.Errorf("passing the proxy listener out: %w", err)
	}
	unix.Close(NetFd)
	return nil
}
