package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
)

// HTTP requests. A request the egress proxy can read — inside a connection
// whose TLS it terminates (network: inspect, a brokered secret's host), or
// plain http:// — is the action
//
//	tool:http:METHOD host:port/path      tool:http:POST api.github.com:443/repos/o/r/issues
//
// decided by the network block's `requests:` rules after the connection
// itself was allowed. A request no rule names keeps the connection's
// decision (allowed). The query string is not part of the action.

// ToolHTTP is the tool of HTTP request actions.
const ToolHTTP = "http"

// HTTPAction is the action of one request (method upper-cased, host
// lower-cased, path as sent without its query).
func HTTPAction(method, host string, port int, path string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return FormatAction(ToolHTTP, strings.ToUpper(method)+" "+strings.ToLower(host)+":"+strconv.Itoa(port)+path)
}

// splitHTTPDetail splits a request action's detail.
func splitHTTPDetail(detail string) (method, hostPort, path string, err error) {
	method, rest, ok := strings.Cut(detail, " ")
	i := strings.IndexByte(rest, '/')
	if !ok || method == "" || i <= 0 {
		return "", "", "", fmt.Errorf("invalid request action detail %q: want METHOD host:port/path", detail)
	}
	hostPort, path = rest[:i], rest[i:]
	if _, _, err := splitHostPort(hostPort); err != nil {
		return "", "", "", err
	}
	return method, hostPort, path, nil
}

// RequestRule is one entry of a network block's `requests:` list: a
// decision for the requests to matching hosts with one of the methods
// (none: any) and a path matching the glob ("" or "*": any; '*' matches
// any run of characters, slashes included).
type RequestRule struct {
	Methods  []string `json:"methods,omitempty"`
	Host     string   `json:"host"`
	Path     string   `json:"path,omitempty"`
	Decision Decision `json:"decision"`
	// Description is shown with the decision.
	Description string `json:"description,omitempty"`
}

// requestPattern is a compiled RequestRule matcher.
type requestPattern struct {
	methods []string
	host    *hostPattern
	path    *glob
}

var httpMethod = func(m string) bool {
	if m == "" || len(m) > 20 {
		return false
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; !(c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Check reports what is wrong with the rule (a bad method, host pattern
// or path pattern), as a policy file's loader refuses it.
func (rr RequestRule) Check() error {
	_, err := compileRequestRule(rr)
	return err
}

func compileRequestRule(rr RequestRule) (*requestPattern, error) {
	hp, err := compileHostPattern(rr.Host)
	if err != nil {
		return nil, err
	}
	rp := &requestPattern{host: hp}
	for _, m := range rr.Methods {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m == "*" {
			rp.methods = nil
			break
		}
		if !httpMethod(m) {
			return nil, fmt.Errorf("invalid HTTP method %q", m)
		}
		rp.methods = append(rp.methods, m)
	}
	if rr.Path != "" && rr.Path != "*" {
		if !strings.HasPrefix(rr.Path, "/") {
			return nil, fmt.Errorf("invalid request path %q: want a glob starting with /", rr.Path)
		}
		if rp.path, err = compileGlob(rr.Path); err != nil {
			return nil, err
		}
	}
	return rp, nil
}

// match reports whether a request action's detail matches.
func (rp *requestPattern) match(detail string) bool {
	method, hostPort, path, err := splitHTTPDetail(detail)
	if err != nil {
		return false
	}
	if rp.methods != nil && !slices.Contains(rp.methods, method) {
		return false
	}
	if !rp.host.match(hostPort) {
		return false
	}
	return rp.path == nil || rp.path.match(path)
}

// spec ranks request rules: a named method and a longer literal path
// prefix are more specific.
func (rp *requestPattern) spec() int {
	n := 2 + rp.host.spec()
	if rp.methods != nil {
		n += 4
	}
	if rp.path != nil {
		n += 2 * len(rp.path.prefix)
		if rp.path.exact {
			n++
		}
	}
	return n
}

func (rp *requestPattern) String() string {
	m := "any method"
	if rp.methods != nil {
		m = strings.Join(rp.methods, ",")
	}
	p := "any path"
	if rp.path != nil {
		p = "path " + strconv.Quote(rp.path.src)
	}
	return fmt.Sprintf("request %s %q %s", m, rp.host.src, p)
}

// decideHTTP is Decide for tool:http actions.
func (e *Engine) decideHTTP(action, detail string) Result {
	if _, _, _, err := splitHTTPDetail(detail); err != nil {
		return Result{Decision: Deny, Action: action, Reason: err.Error()}
	}
	res := e.decideSubject(&subject{action: action, tool: ToolHTTP, detail: detail, cats: catNetwork}, command.FloorNone, "", nil)
	if res.Rule == nil {
		res.Decision = Allow
		res.Reason = "no request rule names it: the connection's decision stands"
	}
	return res
}

// requestRules compiles a network block's requests: list into rules.
func requestRules(roleName, source string, list []RequestRule) []*rule {
	var out []*rule
	for i, rr := range list {
		rp, err := compileRequestRule(rr)
		if err != nil {
			continue // validated at parse time
		}
		desc := rr.Description
		if desc == "" {
			desc = "the role's network requests rule"
		}
		r := &rule{dec: rr.Decision, req: rp, tools: []string{ToolHTTP}, desc: desc,
			ref: RuleRef{ID: roleName + "/network.requests." + strconv.Itoa(i+1), Layer: LayerRole, Source: source}}
		r.finish()
		out = append(out, r)
	}
	return out
}
