package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// sockDiag looks one TCP socket up by its addresses in a network
// namespace through NETLINK_SOCK_DIAG: the kernel's hash lookup of that
// one socket, where reading /proc/PID/net/tcp lists every socket of the
// namespace (TIME_WAIT ones included: thousands after a busy minute,
// tens of milliseconds per read).
type sockDiag struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf [512]byte
}

// newSockDiag opens a sock_diag socket in the network namespace of
// nsPath (/proc/PID/ns/net; "" this process's). Entering a namespace
// needs CAP_SYS_ADMIN (agentbox as root); otherwise it fails and the
// caller reads /proc/PID/net/tcp instead.
func newSockDiag(nsPath string) (*sockDiag, error) {
	if nsPath == "" {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return nil, fmt.Errorf("sock_diag socket: %w", err)
		}
		return &sockDiag{fd: fd}, nil
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread enters the sandbox's namespace, makes the socket
		// (a socket keeps the namespace it was made in) and goes back.
		// Should going back fail, the goroutine ends locked: the runtime
		// then retires the thread. It must go back when it can: the
		// goroutine may run on the main thread, which the runtime never
		// ends, and whose namespace /proc/self shows.
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("this thread's network namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		ns, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("opening %s: %w", nsPath, err)}
			return
		}
		err = unix.Setns(ns, unix.CLONE_NEWNET)
		unix.Close(ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("entering the sandbox's network namespace: %w", err)}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			err = fmt.Errorf("sock_diag socket: %w", err)
		}
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	return &sockDiag{fd: r.fd}, nil
}

// Close closes the netlink socket.
func (s *sockDiag) Close() error { return unix.Close(s.fd) }

// inode returns the inode of the TCP socket whose local address is local
// and remote address remote.
func (s *sockDiag) inode(local, remote *net.TCPAddr) (uint64, error) {
	family := byte(unix.AF_INET)
	lip, rip := local.IP.To4(), remote.IP.To4()
	if lip == nil || rip == nil {
		family, lip, rip = unix.AF_INET6, local.IP.To16(), remote.IP.To16()
	}
	// nlmsghdr (16) + inet_diag_req_v2 (56).
	const reqLen = 16 + 56
	var req [reqLen]byte
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], reqLen)
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], s.seq)
	r := req[16:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:20], lip)
	copy(id[20:36], rip)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(s.fd, req[:], 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag request: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(s.fd, s.buf[:], 0)
		if err != nil {
			return 0, fmt.Errorf("sock_diag answer: %w", err)
		}
		b := s.buf[:n]
		if len(b) < 16 {
			return 0, errors.New("sock_diag answer: short")
		}
		if ne.Uint32(b[8:]) != s.seq {
			continue // an answer to an earlier request that timed out
		}
		switch ne.Uint16(b[4:]) {
		case unix.NLMSG_ERROR:
			if len(b) >= 20 {
				if e := int32(ne.Uint32(b[16:])); e != 0 {
					return 0, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
				}
			}
			return 0, errors.New("sock_diag: no answer")
		case unix.SOCK_DIAG_BY_FAMILY:
			// inet_diag_msg: family, state, timer, retrans, id (48),
			// expires, rqueue, wqueue, uid, inode.
			if len(b) < 16+72 {
				return 0, errors.New("sock_diag answer: short message")
			}
			return uint64(ne.Uint32(b[16+68:])), nil
		default:
			return 0, fmt.Errorf("sock_diag answer: message type %d", ne.Uint16(b[4:]))
		}
	}
}
