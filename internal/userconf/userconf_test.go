package userconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     Settings
		err      string // substring of the error; "" for none
	}{
		{"empty file", "", Settings{}, ""},
		{"only comments", "# nothing yet\n", Settings{}, ""},
		{"limits off", "limits: off\n", Settings{NoLimits: true, Line: 1}, ""},
		{"limits on", "# default\nlimits: on\n", Settings{Line: 2}, ""},
		{"quoted off", "limits: \"off\"\n", Settings{NoLimits: true, Line: 1}, ""},
		{"boolean is not a word", "\n\nlimits: false\n", Settings{}, `config.yaml:3: limits: want on or off, got "false"`},
		{"typo in the key", "limit: off\n", Settings{}, `config.yaml:1: unknown setting "limit" (known: limits, audit, push)`},
		{"set twice", "limits: on\nlimits: off\n", Settings{}, `config.yaml:2: "limits" set again (first on line 1)`},
		{"a list", "- limits\n", Settings{}, "config.yaml:1: want settings as `key: value` lines"},
		{"a mapping value", "limits:\n  memory: off\n", Settings{}, "config.yaml:2: limits: want on or off, got a mapping"},
		{"bad yaml", "limits: [off\n", Settings{}, "user settings config.yaml: yaml:"},
		{"a bare word", "off\n", Settings{}, "config.yaml:1: want settings"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse("config.yaml", []byte(c.in))
			if c.err == "" {
				if err != nil || got != c.want {
					t.Fatalf("Parse = %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Parse error = %v, want one containing %q", err, c.err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	p := filepath.Join(dir, "agentbox", "config.yaml")
	if got := Path(); got != p {
		t.Fatalf("Path = %q, want %q", got, p)
	}
	if s, _, err := Load(); err != nil || s != (Settings{}) {
		t.Fatalf("Load without a file = %+v, %v", s, err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("limits: off\n"), 0o644)
	if s, path, err := Load(); err != nil || !s.NoLimits || path != p {
		t.Fatalf("Load = %+v, %q, %v", s, path, err)
	}
	os.WriteFile(p, []byte(strings.Repeat("#", maxSize+1)), 0o644)
	if _, _, err := Load(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load of an oversized file = %v", err)
	}
	// A relative XDG_CONFIG_HOME is ignored, as for the user policy.
	t.Setenv("XDG_CONFIG_HOME", "rel")
	t.Setenv("HOME", dir)
	if got := Path(); got != filepath.Join(dir, ".config", "agentbox", "config.yaml") {
		t.Fatalf("Path with a relative XDG_CONFIG_HOME = %q", got)
	}
}

// FuzzParse: no input panics, and a successful parse of limits is one of
// the two words.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "limits: off\n", "limits: on", "limits: [off", "a: b\nc: d\n", "- x", "limits: &a off\nx: *a\n", "limits: !!bool off\n", "? [a]\n: b\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") && !strings.HasPrefix(err.Error(), "user settings f:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if s.NoLimits && s.Line == 0 {
			t.Fatalf("limits off without a line: %+v", s)
		}
	})
}

// secret is a header value no message may print.
const secret = "Bearer s3cr3t-t0ken"

func TestParseExport(t *testing.T) {
	full := &Export{URL: "https://collector.example:4318", Headers: map[string]string{"Authorization": secret, "X-Tenant": "ci"},
		Format: "ocsf", Host: "ci-7", CA: "/etc/agentbox/ca.pem", Line: 2, HeadersLine: 4}
	cases := []struct {
		name, in string
		want     *Export
		err      string
	}{
		{"full", "audit:\n  export:\n    url: https://collector.example:4318\n    headers:\n      Authorization: " + secret + "\n      X-Tenant: ci\n    format: ocsf\n    host: ci-7\n    tls: {ca: /etc/agentbox/ca.pem}\n", full, ""},
		{"url only", "limits: on\naudit: {export: {url: 'grpc://127.0.0.1:4317'}}\n", &Export{URL: "grpc://127.0.0.1:4317", Line: 2}, ""},
		{"no url", "audit:\n  export:\n    format: otel\n", nil, "config.yaml:2: audit.export: no url"},
		{"bad scheme", "audit:\n  export:\n    url: ftp://x:1\n", nil, `config.yaml:2: audit.export: export endpoint "ftp://x:1": scheme "ftp"`},
		{"grpc with a path", "audit:\n  export:\n    url: grpc://x:4317/v1/logs\n", nil, "has no path"},
		{"query in url", "audit:\n  export:\n    url: https://x:4318/?token=1\n", nil, "no user, query or fragment"},
		{"unknown format", "audit:\n  export:\n    url: http://x:4318\n    format: cef\n", nil, `export format "cef": want otel or ocsf`},
		{"unknown key", "audit:\n  export:\n    url: http://x:4318\n    timeout: 3s\n", nil, "config.yaml:4: unknown setting audit.export.timeout (known: url, headers, format, host, tls)"},
		{"unknown audit key", "audit:\n  file: /x\n", nil, "config.yaml:2: unknown setting audit.file (known: audit.export)"},
		{"export twice", "audit:\n  export: {url: http://x:1}\n  export: {url: http://y:1}\n", nil, "config.yaml:3: audit.export set again (first on line 2)"},
		{"audit a word", "audit: on\n", nil, `config.yaml:1: audit: want a mapping`},
		{"headers a list", "audit:\n  export:\n    url: http://x:1\n    headers: [" + secret + "]\n", nil, "config.yaml:4: audit.export.headers: want NAME: VALUE lines, got a list"},
		{"header value a mapping", "audit:\n  export:\n    url: http://x:1\n    headers:\n      Authorization: {a: " + secret + "}\n", nil, "config.yaml:5: audit.export.headers.Authorization: want one value, got a mapping"},
		{"header name with colon", "audit:\n  export:\n    url: http://x:1\n    headers:\n      'Authorization:': " + secret + "\n", nil, `config.yaml:5: audit.export.headers: header name "Authorization:"`},
		{"header value two lines", "audit:\n  export:\n    url: http://x:1\n    headers:\n      Authorization: \"" + secret + "\\nX-Evil: 1\"\n", nil, "config.yaml:5: audit.export.headers: header Authorization: its value must be one line"},
		{"header twice", "audit:\n  export:\n    url: http://x:1\n    headers:\n      Authorization: a\n      authorization: " + secret + "\n", nil, "config.yaml:6: audit.export.headers: authorization set again"},
		{"relative ca", "audit:\n  export:\n    url: https://x:1\n    tls: {ca: ca.pem}\n", nil, `config.yaml:4: audit.export.tls.ca: want the absolute path`},
		{"tls key", "audit:\n  export:\n    url: https://x:1\n    tls: {insecure: true}\n", nil, "config.yaml:4: unknown setting audit.export.tls.insecure (known: ca)"},
		{"empty host", "audit:\n  export:\n    url: https://x:1\n    host: ''\n", nil, "config.yaml:4: audit.export.host: want a value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse("config.yaml", []byte(c.in))
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error prints a header's value: %v", err)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse error = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Export, c.want) {
				t.Fatalf("Export = %+v, want %+v", got.Export, c.want)
			}
		})
	}
}

// TestHeadersNeedPrivateFile: a settings file holding export headers
// (credentials) that others may read is refused, naming the file and
// line and the chmod; mode 600 loads.
func TestHeadersNeedPrivateFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(p, []byte("audit:\n  export:\n    url: http://127.0.0.1:4318\n    headers:\n      Authorization: "+secret+"\n"), 0o644)
	os.Chmod(p, 0o644)
	_, err := LoadFile(p)
	if err == nil || !strings.Contains(err.Error(), p+":4: audit.export.headers hold credentials") || !strings.Contains(err.Error(), "chmod 600 "+p) || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("LoadFile of a mode 644 file with headers: %v", err)
	}
	os.Chmod(p, 0o600)
	s, err := LoadFile(p)
	if err != nil || s.Export == nil || s.Export.Headers["Authorization"] != secret {
		t.Fatalf("LoadFile mode 600: %+v, %v", s, err)
	}
	// Without headers the mode does not matter.
	os.WriteFile(p, []byte("audit: {export: {url: 'http://127.0.0.1:4318'}}\n"), 0o644)
	os.Chmod(p, 0o644)
	if _, err := LoadFile(p); err != nil {
		t.Fatal(err)
	}
}

func TestParseHeader(t *testing.T) {
	cases := []struct{ in, k, v, err string }{
		{"Authorization=" + secret, "Authorization", secret, ""},
		{"X-Tenant=a=b", "X-Tenant", "a=b", ""},
		{"Authorization", "", "", "want NAME=VALUE"},
		{"=x", "", "", "header name"},
		{"Bad Name=" + secret, "", "", `header name "Bad Name"`},
		{"Authorization=" + secret + "\r\nX: y", "", "", "header Authorization: its value must be one line"},
	}
	for _, c := range cases {
		k, v, err := ParseHeader(c.in)
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("ParseHeader(%q) error prints the value: %v", c.in, err)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseHeader(%q) = %v, want error %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || k != c.k || v != c.v {
			t.Errorf("ParseHeader(%q) = %q, %q, %v", c.in, k, v, err)
		}
	}
}

// FuzzParseExport: any file content gives settings or an error naming the
// file, never a panic, and never an error that prints a header value.
func FuzzParseExport(f *testing.F) {
	f.Add([]byte("limits: off\n"))
	f.Add([]byte("audit:\n  export:\n    url: https://c:4318\n    headers: {Authorization: " + secret + "}\n    format: ocsf\n    tls: {ca: /ca.pem}\n"))
	f.Add([]byte("audit: {export: {url: 'grpc://c:4317', headers: {a: [1]}}}\n"))
	f.Add([]byte("audit:\n  export: [x]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("config.yaml", b)
		if err != nil {
			if !strings.Contains(err.Error(), "config.yaml") {
				t.Fatalf("error without the file's name: %v", err)
			}
			// (The YAML parser's own syntax errors may quote the text
			// around the error; agentbox's never print a header value.)
			if strings.Contains(err.Error(), "s3cr3t") && !strings.Contains(err.Error(), "yaml:") {
				t.Fatalf("error prints a header's value: %v", err)
			}
			return
		}
		if s.Export != nil {
			if err := s.Export.Check(); err != nil {
				t.Fatalf("parsed an export that does not check: %v", err)
			}
		}
	})
}
