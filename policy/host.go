package policy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Network hosts. A connection through agentbox's egress proxy is the action
// tool:net:<host>:<port> ("tool:net:api.example.com:443"; an IPv6 address in
// brackets). Rules match it with `host:` patterns, which the role's
// `network:` block (allow/ask/deny lists) and policy files at any layer
// write:
//
//	example.com          that host, any port
//	example.com:443      that host and port
//	*.example.com        any subdomain (not example.com itself), any port
//	*                    any host (the network block's default uses it)
//
// Host names compare case-insensitively; a trailing dot is ignored.

// ToolNet is the tool of network connection actions.
const ToolNet = "net"

// hostPattern is a compiled host: matcher.
type hostPattern struct {
	src    string
	any    bool   // "*"
	suffix string // "*.example.com" -> ".example.com"
	host   string // exact host
	port   int    // 0: any port
}

// compileHostPattern parses a host pattern.
func compileHostPattern(s string) (*hostPattern, error) {
	p := &hostPattern{src: s}
	h := strings.TrimSpace(s)
	if h == "" {
		return nil, fmt.Errorf("invalid host pattern %q: empty", s)
	}
	hasPort := strings.HasPrefix(h, "[") && strings.Contains(h, "]:") || !strings.HasPrefix(h, "[") && strings.Count(h, ":") == 1
	if !strings.HasPrefix(h, "[") && strings.Count(h, ":") > 1 {
		return nil, fmt.Errorf("invalid host pattern %q: write IPv6 addresses in brackets ([::1]:443)", s)
	}
	if hasPort {
		i := strings.LastIndexByte(h, ':')
		port, err := strconv.Atoi(h[i+1:])
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("invalid host pattern %q: port must be 1-65535", s)
		}
		p.port = port
		h = h[:i]
	}
	if strings.HasSuffix(h, "*.") || strings.HasSuffix(h, "..") {
		return nil, fmt.Errorf("invalid host pattern %q", s)
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	switch {
	case h == "*":
		p.any = true
	case strings.HasPrefix(h, "*."):
		if err := validHost(h[2:]); err != nil {
			return nil, fmt.Errorf("invalid host pattern %q: %v", s, err)
		}
		p.suffix = h[1:]
	default:
		if strings.Contains(h, "*") {
			return nil, fmt.Errorf("invalid host pattern %q: '*' only as a whole label at the start (*.example.com)", s)
		}
		if err := validHost(h); err != nil {
			return nil, fmt.Errorf("invalid host pattern %q: %v", s, err)
		}
		p.host = h
	}
	return p, nil
}

// validHost accepts DNS names and IP literals (IPv6 in brackets).
func validHost(h string) error {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		if net.ParseIP(h[1:len(h)-1]) == nil {
			return fmt.Errorf("%q is not an IPv6 address", h)
		}
		return nil
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	if len(h) > 253 {
		return fmt.Errorf("host name longer than 253 characters")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q: empty or overlong label", h)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q: character %q not allowed in a host name", h, c)
			}
		}
	}
	return nil
}

// splitHostPort splits a net action's detail "host:port" (IPv6 in brackets).
func splitHostPort(detail string) (host string, port int, err error) {
	h, ps, err := net.SplitHostPort(detail)
	if err != nil {
		return "", 0, fmt.Errorf("invalid network action detail %q: want host:port", detail)
	}
	port, err = strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("invalid network action detail %q: port must be 1-65535", detail)
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if err := validHost(h); err != nil {
		return "", 0, fmt.Errorf("invalid network action detail %q: %v", detail, err)
	}
	return h, port, nil
}

// NetAction is the action string of a connection to host:port.
func NetAction(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return FormatAction(ToolNet, strings.ToLower(host)+":"+strconv.Itoa(port))
}

// match reports whether a net action's detail matches.
func (p *hostPattern) match(detail string) bool {
	h, port, err := splitHostPort(detail)
	if err != nil {
		return false
	}
	if p.port != 0 && p.port != port {
		return false
	}
	switch {
	case p.any:
		return true
	case p.suffix != "":
		return strings.HasSuffix(h, p.suffix)
	}
	return h == p.host
}

// spec ranks host patterns: an exact host and port beats an exact host,
// which beats a subdomain pattern (longer suffixes first), which beats "*".
func (p *hostPattern) spec() int {
	n := 0
	switch {
	case p.any:
		n = 1
	case p.suffix != "":
		n = 2 * len(p.suffix)
	default:
		n = 2*len(p.host) + 200
	}
	if p.port != 0 {
		n += 100
	}
	return n
}

// HostMatcher returns a test of host:port against patterns (the network
// block's syntax: example.com, *.example.com, host:port, an address), or
// the first pattern that is not one.
func HostMatcher(patterns []string) (func(host string, port int) bool, error) {
	ps := make([]*hostPattern, 0, len(patterns))
	for _, s := range patterns {
		p, err := compileHostPattern(s)
		if err != nil {
			return nil, fmt.Errorf("host pattern %q: %w", s, err)
		}
		ps = append(ps, p)
	}
	return func(host string, port int) bool {
		detail := NetAction(host, port)[len("tool:net:"):]
		for _, p := range ps {
			if p.match(detail) {
				return true
			}
		}
		return false
	}, nil
}
