package userconf

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AuditKey is the settings file's audit block:
//
//	audit:
//	  export:
//	    url: https://collector.example:4318
//	    headers: {Authorization: Bearer ...}
//	    format: ocsf
//	    host: ci-7
//	    tls: {ca: /etc/agentbox/collector-ca.pem}
const AuditKey = "audit"

// Export says where and how a run's audit events are exported over OTLP
// (audit.export in the settings file, or run's --audit-export flags; the
// agentbox-export binary receives it as JSON in ExportEnv). Headers may
// hold credentials: no message of this package prints a header's value.
type Export struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Format  string            `json:"format,omitempty"` // otel (default) or ocsf
	Host    string            `json:"host,omitempty"`   // host.name the records carry (default the machine's)
	CA      string            `json:"ca,omitempty"`     // PEM roots of the collector's TLS certificate
	// Line and HeadersLine are where the block and its headers are in
	// the settings file, for messages (0: not from the file).
	Line        int `json:"-"`
	HeadersLine int `json:"-"`
}

// ExportEnv is the environment variable agentbox hands an Export to
// agentbox-export in (JSON): not its command line, which every user of
// the machine can read in /proc.
const ExportEnv = "AGENTBOX_EXPORT_CONFIG"

// Check validates e: an OTLP endpoint URL (http, https, grpc, grpcs; no
// user, query or fragment), a known format, header names and values
// that fit in one HTTP header line. Errors name the part that is wrong,
// never a header's value.
func (e Export) Check() error {
	u, err := url.Parse(e.URL)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("export endpoint %q: want SCHEME://HOST:PORT[/PATH] (no user, query or fragment)", clip(e.URL))
	}
	switch u.Scheme {
	case "http", "https":
	case "grpc", "grpcs":
		if u.Path != "" && u.Path != "/" {
			return fmt.Errorf("export endpoint %q: an OTLP/gRPC endpoint has no path", clip(e.URL))
		}
	default:
		return fmt.Errorf("export endpoint %q: scheme %q: want http, https, grpc or grpcs", clip(e.URL), u.Scheme)
	}
	if e.Format != "" && e.Format != "otel" && e.Format != "ocsf" {
		return fmt.Errorf("export format %q: want otel or ocsf", clip(e.Format))
	}
	for k, v := range e.Headers {
		if err := checkHeader(k, v); err != nil {
			return err
		}
	}
	if e.CA != "" && !filepath.IsAbs(e.CA) {
		return fmt.Errorf("export CA file %q: want an absolute path", clip(e.CA))
	}
	return nil
}

// ParseHeader parses one --header value NAME=VALUE. The error names the
// header, never its value (an authorization token).
func ParseHeader(s string) (name, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok {
		return "", "", errors.New("header: want NAME=VALUE (no = in it)")
	}
	if err := checkHeader(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

func checkHeader(k, v string) error {
	if k == "" || len(k) > 200 || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == ':' }) {
		return fmt.Errorf("header name %q: want a token (no spaces, colon or control characters)", clip(k))
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("header %s: its value must be one line", k)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// parseAudit reads the audit block: one key, export, a mapping.
func parseAudit(name string, v *yaml.Node) (*Export, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: %s: want a mapping (export: {url: ...}), got %s", name, v.Line, AuditKey, describe(v))
	}
	var e *Export
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode || k.Value != "export":
			return nil, fmt.Errorf("%s:%d: unknown setting %s.%s (known: %s.export)", name, k.Line, AuditKey, keyName(k), AuditKey)
		case e != nil:
			return nil, fmt.Errorf("%s:%d: %s.export set again (first on line %d)", name, k.Line, AuditKey, e.Line)
		}
		var err error
		if e, err = parseExport(name, k.Line, x); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// parseExport reads audit.export.
func parseExport(name string, line int, v *yaml.Node) (*Export, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: audit.export: want a mapping (url: ..., headers: ..., format: ..., host: ..., tls: {ca: ...}), got %s", name, v.Line, describe(v))
	}
	e := &Export{Line: line}
	seen := map[string]int{}
	scalar := func(k, x *yaml.Node) (string, error) {
		if x.Kind != yaml.ScalarNode || x.Tag == "!!null" || x.Value == "" {
			return "", fmt.Errorf("%s:%d: audit.export.%s: want a value, got %s", name, x.Line, k.Value, describe(x))
		}
		return x.Value, nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d: audit.export: a setting's name must be a plain word", name, k.Line)
		}
		if prev, dup := seen[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: audit.export.%s set again (first on line %d)", name, k.Line, k.Value, prev)
		}
		seen[k.Value] = k.Line
		var err error
		switch k.Value {
		case "url":
			e.URL, err = scalar(k, x)
		case "format":
			e.Format, err = scalar(k, x)
		case "host":
			e.Host, err = scalar(k, x)
		case "headers":
			e.HeadersLine = k.Line
			e.Headers, err = parseHeaders(name, x)
		case "tls":
			e.CA, err = parseTLS(name, x)
		default:
			return nil, fmt.Errorf("%s:%d: unknown setting audit.export.%s (known: url, headers, format, host, tls)", name, k.Line, k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	if e.URL == "" {
		return nil, fmt.Errorf("%s:%d: audit.export: no url (the OTLP logs endpoint: http://HOST:4318, grpc://HOST:4317, https://, grpcs://)", name, line)
	}
	if err := e.Check(); err != nil {
		return nil, fmt.Errorf("%s:%d: audit.export: %v", name, line, err)
	}
	return e, nil
}

// parseHeaders reads audit.export.headers, NAME: VALUE pairs. Errors say
// where, never the value.
func parseHeaders(name string, v *yaml.Node) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: audit.export.headers: want NAME: VALUE lines, got %s", name, v.Line, kind(v))
	}
	h := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d: audit.export.headers: a header's name must be a plain word", name, k.Line)
		}
		if x.Kind != yaml.ScalarNode || x.Tag == "!!null" {
			return nil, fmt.Errorf("%s:%d: audit.export.headers.%s: want one value, got %s", name, x.Line, clip(k.Value), kind(x))
		}
		if err := checkHeader(k.Value, x.Value); err != nil {
			return nil, fmt.Errorf("%s:%d: audit.export.headers: %v", name, k.Line, err)
		}
		for prev := range h {
			if strings.EqualFold(prev, k.Value) {
				return nil, fmt.Errorf("%s:%d: audit.export.headers: %s set again", name, k.Line, k.Value)
			}
		}
		h[k.Value] = x.Value
	}
	return h, nil
}

// parseTLS reads audit.export.tls: {ca: FILE}.
func parseTLS(name string, v *yaml.Node) (string, error) {
	if v.Kind != yaml.MappingNode {
		return "", fmt.Errorf("%s:%d: audit.export.tls: want {ca: FILE}, got %s", name, v.Line, describe(v))
	}
	ca := ""
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value != "ca" {
			return "", fmt.Errorf("%s:%d: unknown setting audit.export.tls.%s (known: ca)", name, k.Line, keyName(k))
		}
		if ca != "" {
			return "", fmt.Errorf("%s:%d: audit.export.tls.ca set again", name, k.Line)
		}
		if x.Kind != yaml.ScalarNode || x.Value == "" || !filepath.IsAbs(x.Value) {
			return "", fmt.Errorf("%s:%d: audit.export.tls.ca: want the absolute path of a PEM file, got %s", name, x.Line, describe(x))
		}
		ca = x.Value
	}
	return ca, nil
}

// kind names a node's shape without its value (a header's value may be a
// secret).
func kind(v *yaml.Node) string {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "nothing"
		}
		return "a value"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "an alias"
}

// keyName is a mapping key as a message names it.
func keyName(k *yaml.Node) string {
	if k.Kind == yaml.ScalarNode {
		return clip(k.Value)
	}
	return "(" + kind(k) + ")"
}
