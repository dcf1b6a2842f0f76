package helper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Config is everything the helper needs from the launcher. It travels on
// ConfigFd in the binary form Encode writes and Decode reads: no JSON
// decoder (and none of its reflection) on the launch path.
type Config struct {
	Argv      []string
	Env       []string
	Dir       string
	ParentPid int
	// Rules are the Landlock path rules (rights are Landlock access bits).
	Rules []Rule
	// TCPConnect and TCPBind are the TCP ports Landlock lets the sandbox
	// connect to and bind.
	TCPConnect, TCPBind []uint16
	BestEffort          bool
	Rlimits             []Rlimit
	// DenyUnixSockets refuses socket(AF_UNIX): set when Landlock cannot
	// control connecting to pathname unix sockets outside (ABI < 9).
	DenyUnixSockets bool
	// RunAs, when set, is the uid/gid the command runs as (agentbox runs
	// as root on a workspace owned by a regular user).
	RunAs *Credential
	// ReadOnlyOutside, when set (root runs), lists the writable areas: the
	// helper makes everything else read-only in a mount namespace of its
	// own (mounts.go), closing metadata changes Landlock does not cover.
	ReadOnlyOutside []string
	// ReadOnlyBestEffort accepts a kernel that refuses the mount namespace
	// (one warning line instead of a refusal).
	ReadOnlyBestEffort bool
	// NetNS: network mode proxy — a network namespace of the sandbox's
	// own with only loopback; the proxy listener goes out on NetFd.
	NetNS bool
	// Forward are loopback ports listened on inside that namespace and
	// passed out with the proxy listener, in this order.
	Forward []uint16
	// ExecNotify: install the exec-notification filter last and pass its
	// listener out on NotifyFd (notify-mode supervision).
	ExecNotify bool
	// Overlay, when set (a review run), mounts target/ in the sandbox's
	// mount namespace as an overlay: the real directory below, the run's
	// layer above (review.go).
	Overlay *Overlay
	// IsolateNet moves the sandbox into a network namespace of its own
	// with only loopback, and passes nothing out: the Landlock ladder's
	// stand-in for TCP rules (Landlock ABI < 4) with no network granted.
	IsolateNet bool
	// NewPID: the helper was started in a pid namespace of its own (the
	// ladder's stand-in for Landlock's signal scope, ABI < 6). Its parent
	// is outside, so getppid is 0 and the helper sets its own pdeathsig.
	NewPID bool
	// LandlockABI, when not 0, caps the Landlock ABI the helper uses
	// below the kernel's (AGENTBOX_LANDLOCK_ABI_MAX, for the ladder's
	// tests); the launcher has already made up for what the cap drops.
	LandlockABI int
	// Caches are the host's build and package caches shown copy-on-write
	// in the sandbox's mount namespace (cachelayers.go).
	Caches []CacheLayer
}

// Overlay is a review run's copy-on-write view of one directory.
type Overlay struct {
	Target, Upper, Work string
}

// Rule is one Landlock path rule.
type Rule struct {
	Path string
	// Access is a set of Landlock filesystem access rights
	// (LANDLOCK_ACCESS_FS_*); 0 skips the rule.
	Access uint64
	// Optional rules are skipped when the path does not exist.
	Optional bool
}

// Rlimit is one setrlimit call the helper makes before exec.
type Rlimit struct {
	Resource int
	Name     string
	Cur, Max uint64
}

// Credential is a uid/gid pair the sandboxed command runs as.
type Credential struct {
	UID, GID int
	// Groups are the owner's supplementary groups, never root's.
	Groups []int
}

// FormatVersion names the layout Encode writes. A helper binary from
// another build refuses a config of another version with one line naming
// both, instead of misreading it. Bump it with any change to the layout
// or to what a field means (TestEncodeGolden fails until the golden bytes
// are updated too). 6: CacheLayer.Fd numbers the descriptors sent with
// the config instead of naming a descriptor the helper inherits.
const FormatVersion = 6

// magic opens every encoded config.
var magic = [3]byte{'A', 'B', 'H'}

// Flag bits of the one flags field.
const (
	flagBestEffort = 1 << iota
	flagDenyUnix
	flagReadOnlyBestEffort
	flagNetNS
	flagExecNotify
	flagRunAs
	flagOverlay
	flagIsolateNet
	flagNewPID
	flagsKnown = 1<<iota - 1
)

// Encode appends c's binary form to b: the magic, the version, then each
// field in declaration order; integers are unsigned varints, strings and
// lists a varint count then the elements, the booleans one flags varint.
func (c *Config) Encode(b []byte) []byte {
	b = append(b, magic[:]...)
	b = append(b, FormatVersion)
	var flags uint64
	set := func(bit uint64, on bool) {
		if on {
			flags |= bit
		}
	}
	set(flagBestEffort, c.BestEffort)
	set(flagDenyUnix, c.DenyUnixSockets)
	set(flagReadOnlyBestEffort, c.ReadOnlyBestEffort)
	set(flagNetNS, c.NetNS)
	set(flagExecNotify, c.ExecNotify)
	set(flagRunAs, c.RunAs != nil)
	set(flagOverlay, c.Overlay != nil)
	set(flagIsolateNet, c.IsolateNet)
	set(flagNewPID, c.NewPID)
	b = binary.AppendUvarint(b, flags)
	b = appendStrings(b, c.Argv)
	b = appendStrings(b, c.Env)
	b = appendString(b, c.Dir)
	b = binary.AppendUvarint(b, uint64(c.ParentPid))
	b = binary.AppendUvarint(b, uint64(len(c.Rules)))
	for _, r := range c.Rules {
		b = appendString(b, r.Path)
		b = binary.AppendUvarint(b, r.Access)
		b = appendBool(b, r.Optional)
	}
	b = appendPorts(b, c.TCPConnect)
	b = appendPorts(b, c.TCPBind)
	b = binary.AppendUvarint(b, uint64(len(c.Rlimits)))
	for _, r := range c.Rlimits {
		b = binary.AppendUvarint(b, uint64(r.Resource))
		b = appendString(b, r.Name)
		b = binary.AppendUvarint(b, r.Cur)
		b = binary.AppendUvarint(b, r.Max)
	}
	if c.RunAs != nil {
		b = binary.AppendUvarint(b, uint64(c.RunAs.UID))
		b = binary.AppendUvarint(b, uint64(c.RunAs.GID))
		b = binary.AppendUvarint(b, uint64(len(c.RunAs.Groups)))
		for _, g := range c.RunAs.Groups {
			b = binary.AppendUvarint(b, uint64(g))
		}
	}
	b = appendStrings(b, c.ReadOnlyOutside)
	b = appendPorts(b, c.Forward)
	if c.Overlay != nil {
		b = appendStrings(b, []string{c.Overlay.Target, c.Overlay.Upper, c.Overlay.Work})
	}
	b = binary.AppendUvarint(b, uint64(c.LandlockABI))
	b = binary.AppendUvarint(b, uint64(len(c.Caches)))
	for _, l := range c.Caches {
		for _, s := range []string{l.Name, l.Lower, l.Upper, l.Work, l.Target} {
			b = appendString(b, s)
		}
		b = binary.AppendUvarint(b, l.Access)
		b = binary.AppendUvarint(b, uint64(l.Fd))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendPorts(b []byte, ps []uint16) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = binary.AppendUvarint(b, uint64(p))
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// ErrFormat is wrapped by Decode's error when data was written by a
// launcher of another build (another FormatVersion).
var ErrFormat = errors.New("config format differs")

// Decode reads a config Encode wrote. Anything else — truncated data, a
// count larger than the data, an overlong varint, a value out of range,
// trailing bytes — is an error naming the field and the byte offset; it
// never panics and never allocates more than the input's size suggests.
func Decode(data []byte) (*Config, error) {
	d := decoder{data: data}
	if len(data) < len(magic)+1 || [3]byte(data[:3]) != magic {
		return nil, errors.New("config: not a helper config (bad magic)")
	}
	if v := data[3]; v != FormatVersion {
		return nil, fmt.Errorf("config: %w: format %d, this helper reads %d", ErrFormat, v, FormatVersion)
	}
	d.off = 4
	c := &Config{}
	flags := d.uint("flags", flagsKnown)
	c.BestEffort = flags&flagBestEffort != 0
	c.DenyUnixSockets = flags&flagDenyUnix != 0
	c.ReadOnlyBestEffort = flags&flagReadOnlyBestEffort != 0
	c.NetNS = flags&flagNetNS != 0
	c.ExecNotify = flags&flagExecNotify != 0
	c.IsolateNet = flags&flagIsolateNet != 0
	c.NewPID = flags&flagNewPID != 0
	c.Argv = d.strings("argv")
	c.Env = d.strings("env")
	c.Dir = d.string("dir")
	c.ParentPid = int(d.uint("parent pid", math.MaxInt32))
	if n := d.count("rules"); n > 0 {
		c.Rules = make([]Rule, n)
		for i := range c.Rules {
			c.Rules[i] = Rule{Path: d.string("rule path"), Access: d.uint("rule access", math.MaxUint64), Optional: d.bool("rule optional")}
		}
	}
	c.TCPConnect = d.ports("tcp connect")
	c.TCPBind = d.ports("tcp bind")
	if n := d.count("rlimits"); n > 0 {
		c.Rlimits = make([]Rlimit, n)
		for i := range c.Rlimits {
			c.Rlimits[i] = Rlimit{
				Resource: int(d.uint("rlimit resource", math.MaxInt32)),
				Name:     d.string("rlimit name"),
				Cur:      d.uint("rlimit cur", math.MaxUint64),
				Max:      d.uint("rlimit max", math.MaxUint64),
			}
		}
	}
	if flags&flagRunAs != 0 {
		cr := &Credential{UID: int(d.uint("uid", math.MaxUint32)), GID: int(d.uint("gid", math.MaxUint32))}
		if n := d.count("groups"); n > 0 {
			cr.Groups = make([]int, n)
			for i := range cr.Groups {
				cr.Groups[i] = int(d.uint("group", math.MaxUint32))
			}
		}
		c.RunAs = cr
	}
	c.ReadOnlyOutside = d.strings("read-only outside")
	c.Forward = d.ports("forward")
	if flags&flagOverlay != 0 {
		if o := d.strings("overlay"); d.err == nil && len(o) != 3 {
			d.fail("overlay", "%d paths, want target, upper and work", len(o))
		} else if d.err == nil {
			c.Overlay = &Overlay{Target: o[0], Upper: o[1], Work: o[2]}
		}
	}
	c.LandlockABI = int(d.uint("landlock abi", 255))
	if n := d.count("caches"); n > 0 {
		c.Caches = make([]CacheLayer, n)
		for i := range c.Caches {
			c.Caches[i] = CacheLayer{Name: d.string("cache name"), Lower: d.string("cache lower"), Upper: d.string("cache upper"),
				Work: d.string("cache work"), Target: d.string("cache target"), Access: d.uint("cache access", math.MaxUint64),
				Fd: int(d.uint("cache fd", math.MaxInt32))}
		}
	}
	if d.err == nil && d.off != len(d.data) {
		d.fail("end", "%d trailing bytes", len(d.data)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// decoder reads fields in order; the first error sticks and every later
// read returns a zero value.
type decoder struct {
	data []byte
	off  int
	err  error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("config: %s at byte %d: %s", field, d.off, fmt.Sprintf(format, args...))
	}
}

// uint reads a minimal unsigned varint no larger than max.
func (d *decoder) uint(field string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for i, shift := d.off, uint(0); i < len(d.data); i, shift = i+1, shift+7 {
		c := d.data[i]
		if shift == 63 && c > 1 {
			d.fail(field, "varint overflows 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && i > d.off {
				d.fail(field, "overlong varint")
				return 0
			}
			if v > max {
				d.fail(field, "value %d out of range (max %d)", v, max)
				return 0
			}
			d.off = i + 1
			return v
		}
	}
	d.fail(field, "truncated")
	return 0
}

// count reads a list length; each element takes at least one byte, so a
// count above the remaining bytes is refused before anything is allocated.
func (d *decoder) count(field string) int {
	n := d.uint(field+" count", uint64(len(d.data)))
	if d.err == nil && n > uint64(len(d.data)-d.off) {
		d.fail(field, "count %d exceeds the %d bytes left", n, len(d.data)-d.off)
		return 0
	}
	return int(n)
}

func (d *decoder) string(field string) string {
	n := d.count(field)
	if d.err != nil {
		return ""
	}
	s := string(d.data[d.off : d.off+n])
	d.off += n
	return s
}

func (d *decoder) strings(field string) []string {
	n := d.count(field)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string(field)
	}
	return ss
}

func (d *decoder) ports(field string) []uint16 {
	n := d.count(field)
	if n == 0 {
		return nil
	}
	ps := make([]uint16, n)
	for i := range ps {
		ps[i] = uint16(d.uint(field+" port", math.MaxUint16))
	}
	return ps
}

func (d *decoder) bool(field string) bool {
	return d.uint(field, 1) == 1
}
