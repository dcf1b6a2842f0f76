//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// scopeTimeout bounds each conversation with systemd.
const scopeTimeout = 10 * time.Second

// managerConn connects to the systemd manager that owns this user's
// cgroups: the system manager for root (its private socket, else the
// system bus), the user manager for anyone else (the session bus at
// $XDG_RUNTIME_DIR/bus, else the manager's private socket there). It
// returns what it connected to, for messages.
func managerConn(ctx context.Context) (*sddbus.Conn, string, error) {
	var addr string
	conn, err := sddbus.NewConnection(func() (*dbus.Conn, error) {
		c, a, err := managerDial(ctx)
		addr = a
		return c, err
	})
	if err != nil {
		return nil, "", err
	}
	return conn, addr, nil
}

// managerDial opens one authenticated D-Bus connection to the manager
// managerConn describes.
func managerDial(ctx context.Context) (*dbus.Conn, string, error) {
	type bus struct {
		addr  string
		hello bool // a bus daemon (Hello), not systemd's own socket
	}
	var tries []bus
	if os.Geteuid() == 0 {
		tries = []bus{{"/run/systemd/private", false}, {"/run/dbus/system_bus_socket", true}}
	} else {
		rt := runtimeDir()
		tries = []bus{{filepath.Join(rt, "bus"), true}, {filepath.Join(rt, "systemd", "private"), false}}
	}
	var errs []string
	for _, b := range tries {
		if _, err := os.Stat(b.addr); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", b.addr, errors.Unwrap(err)))
			continue
		}
		c, err := dbus.Dial("unix:path="+b.addr, dbus.WithContext(ctx))
		if err == nil {
			err = c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))})
			if err == nil && b.hello {
				err = c.Hello()
			}
			if err != nil {
				c.Close()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", b.addr, err))
			continue
		}
		return c, b.addr, nil
	}
	who := "the systemd user manager"
	if os.Geteuid() == 0 {
		who = "the systemd system manager"
	}
	return nil, "", fmt.Errorf("cannot reach %s (%s)", who, strings.Join(errs, "; "))
}

// runtimeDir is the user's runtime directory: $XDG_RUNTIME_DIR when it is
// set to a directory of this user's, else /run/user/UID.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil && int(st.Uid) == os.Getuid() {
			return d
		}
	}
	return fmt.Sprintf("/run/user/%d", os.Getuid())
}

// startScope asks systemd for a transient scope with Delegate=yes and the
// launcher (this process, every thread) as its member, and waits until
// the launcher is in it. The launcher rather than the run's helper: the
// helper is then born straight into the run's cgroup (CLONE_INTO_CGROUP),
// the run's limits stay agentbox's to set and read, and the runs of one
// launcher share one scope. The scope ends when its last process does.
// It returns the unit's name.
func startScope() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	conn, addr, err := managerConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	owner, err := ownerSuffix(os.Getpid())
	if err != nil {
		return "", err
	}
	// agentbox-<pid>-<starttime>.scope: unique, and says whose it is.
	unit := "agentbox-" + strings.TrimPrefix(owner, cgroupOwnerMarker) + ".scope"
	props := []sddbus.Property{
		sddbus.PropDescription(fmt.Sprintf("agentbox runs with limits (launcher pid %d)", os.Getpid())),
		sddbus.PropPids(uint32(os.Getpid())),
		{Name: "Delegate", Value: dbus.MakeVariant(true)},
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	// Stopping the service agentbox was started in (a CI runner's)
	// still stops agentbox: the scope is PartOf it, when this manager
	// has it. Not for a scope: one agentbox leaves empty stops by itself.
	if from, err := conn.GetUnitNameByPID(ctx, uint32(os.Getpid())); err == nil && strings.HasSuffix(from, ".service") {
		props = append(props, sddbus.Property{Name: "PartOf", Value: dbus.MakeVariant([]string{from})})
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, unit, "fail", props, done); err != nil {
		return "", fmt.Errorf("StartTransientUnit %s over %s: %w", unit, addr, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return "", fmt.Errorf("systemd (%s) could not start %s: job %s", addr, unit, res)
		}
	case <-ctx.Done():
		// No JobRemoved signal came (some buses do not forward it): the
		// membership below is what counts.
	}
	for {
		own, err := ownCgroups()
		if err == nil && filepath.Base(own[""]) == unit {
			return unit, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("systemd (%s) started %s but agentbox is not in it after %v (own cgroup %q)", addr, unit, scopeTimeout, own[""])
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// unitDelegated asks the systemd manager which unit owns the cgroup
// path (relative to the v2 root; GetUnitByControlGroup walks up to the
// nearest unit) and whether that unit has Delegate=yes. False when it
// cannot tell.
func unitDelegated(path string) bool {
	if !systemdBooted() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	conn, _, err := managerDial(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	var unit dbus.ObjectPath
	mgr := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.GetUnitByControlGroup", 0, path).Store(&unit); err != nil {
		return false
	}
	obj := conn.Object("org.freedesktop.systemd1", unit)
	for _, iface := range []string{"Scope", "Service"} {
		v, err := obj.GetProperty("org.freedesktop.systemd1." + iface + ".Delegate")
		if err != nil {
			continue
		}
		d, ok := v.Value().(bool)
		return ok && d
	}
	return false
}
