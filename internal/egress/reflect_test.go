package egress

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// echoHandler answers every request with all it received: each header as
// an X-Echo-* header of the answer and a line of the body, the query in
// X-Echo-Query and Location-free text, the body; base64 and URL-escaped
// copies of the header lines; a trailer; the body's lines in two flushed
// halves, so the value can straddle the answers' chunks. Paths:
// /redirect answers 302 to ?next= with the x-api-key it got in the query;
// /gzip answers the same echo gzip-encoded whatever the client accepts.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	var lines []string
	for k, vs := range r.Header {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
			w.Header().Add("X-Echo-"+k, v)
		}
	}
	sort.Strings(lines)
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Echo-Query", r.URL.RawQuery)
	if r.URL.Path == "/redirect" {
		w.Header().Set("Location", r.URL.Query().Get("next")+"?k="+url.QueryEscape(r.Header.Get("X-Api-Key")))
		w.WriteHeader(http.StatusFound)
		return
	}
	text := strings.Join(lines, "\n") + "\nquery: " + r.URL.RawQuery + "\nbody: " + string(body) + "\n" +
		"b64: " + base64.StdEncoding.EncodeToString([]byte(strings.Join(lines, "\n"))) + "\n" +
		"b64url: " + base64.URLEncoding.EncodeToString([]byte("x"+strings.Join(lines, "\n"))) + "\n" +
		"escaped: " + url.QueryEscape(strings.Join(lines, "\n")) + "\n"
	if r.URL.Path == "/gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, text)
		zw.Close()
		return
	}
	w.Header().Set("Trailer", "X-Echo-Trailer")
	w.Header().Set("Content-Type", "text/event-stream")
	half := len(text) / 2
	if i := strings.Index(text, realKey); i >= 0 {
		half = i + len(realKey)/2 // the value cut in two
	}
	io.WriteString(w, text[:half])
	http.NewResponseController(w).Flush()
	io.WriteString(w, text[half:])
	w.Header().Set("X-Echo-Trailer", r.Header.Get("X-Api-Key"))
}

// TestReflectionEcho: through the terminating proxy to an upstream that
// echoes every request header, the query and the body back — in headers,
// a trailer, the body (the value split across flushed chunks), base64'd
// and URL-escaped, gzip-encoded — the upstream receives the real value
// only in the declared header; the client never sees it in any answer
// (it sees the placeholder there); a placeholder in any other place is
// refused before anything reaches the upstream; each reflection is
// audited with the secret's name, never the value.
func TestReflectionEcho(t *testing.T) {
	w := newInspectWorld(t, Config{Secrets: []Secret{exampleSecret()}}, echoHandler)
	get := func(method, u string, hdr map[string]string, body string) (int, http.Header, string) {
		t.Helper()
		a := w.send(t, method, u, hdr, body)
		if a.readErr != nil {
			t.Fatalf("%s %s: reading the answer: %v", method, u, a.readErr)
		}
		return a.code, a.header, a.body
	}
	for _, tc := range []struct {
		name  string
		path  string
		hdr   map[string]string
		body  string
		code  int
		where string // the refusal names it
	}{
		{name: "declared header", path: "/echo", hdr: map[string]string{"X-Api-Key": placeholder}, body: "prompt with " + placeholder, code: 200},
		{name: "declared header gzip answer", path: "/gzip", hdr: map[string]string{"X-Api-Key": placeholder, "Accept-Encoding": "gzip"}, code: 200},
		{name: "bearer", path: "/echo", hdr: map[string]string{"Authorization": "Bearer " + placeholder}, code: 200},
		{name: "undeclared header", path: "/echo", hdr: map[string]string{"X-Api-Key": placeholder, "X-Debug-Echo": placeholder}, code: 403, where: "the header X-Debug-Echo"},
		{name: "cookie", path: "/echo", hdr: map[string]string{"Cookie": "k=" + placeholder}, code: 403, where: "the header Cookie"},
		{name: "basic in another header", path: "/echo", hdr: map[string]string{"X-Auth": "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+placeholder))}, code: 403, where: "the header X-Auth"},
		{name: "query", path: "/echo?key=" + placeholder, code: 403, where: "the query"},
		{name: "escaped query", path: "/echo?key=" + url.QueryEscape(" "+placeholder), code: 403, where: "the query"},
		{name: "path", path: "/echo/" + placeholder, code: 403, where: "the path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.mu.Lock()
			before := len(w.seen)
			w.mu.Unlock()
			code, h, body := get("POST", w.apiURL(tc.path), tc.hdr, tc.body)
			if code != tc.code {
				t.Fatalf("got %d %q, want %d", code, body, tc.code)
			}
			w.mu.Lock()
			seen := w.seen[before:]
			w.mu.Unlock()
			if tc.code == 403 {
				if !strings.Contains(body, "placeholder of secret API_KEY in "+tc.where) {
					t.Errorf("refusal %q does not name %s", body, tc.where)
				}
				if len(seen) != 0 {
					t.Errorf("a refused request reached the upstream")
				}
				return
			}
			// Upstream: the real value in the declared header only.
			for _, r := range seen {
				for k, vs := range r.Header {
					for _, v := range vs {
						if strings.Contains(v, realKey) && !(k == "X-Api-Key" || k == "Authorization") {
							t.Errorf("the upstream got the real value in %s", k)
						}
					}
				}
				if strings.Contains(r.URL.String(), realKey) {
					t.Errorf("the upstream got the real value in the URL")
				}
			}
			// Client: never the real value, in any form searched for.
			all := body
			for k, vs := range h {
				all += "\n" + k + ": " + strings.Join(vs, ", ")
			}
			if strings.Contains(all, realKey) {
				t.Errorf("the answer carries the real value:\n%s", all)
			}
			for _, line := range strings.Split(body, "\n") {
				var dec []byte
				var err error
				if v, ok := strings.CutPrefix(line, "b64: "); ok {
					dec, err = base64.StdEncoding.DecodeString(v)
				} else if v, ok := strings.CutPrefix(line, "b64url: "); ok {
					dec, err = base64.URLEncoding.DecodeString(v)
				} else if v, ok := strings.CutPrefix(line, "escaped: "); ok {
					var u string
					u, err = url.QueryUnescape(v)
					dec = []byte(u)
				}
				if err != nil {
					t.Errorf("%q no longer decodes: %v", line, err)
				}
				if bytes.Contains(dec, []byte(realKey)) {
					t.Errorf("the answer carries the real value encoded: %q decodes to %q", line, dec)
				}
			}
			if !strings.Contains(body, placeholder) {
				t.Errorf("the echo lacks the placeholder in place of the value:\n%s", body)
			}
			if tc.path == "/echo" && tc.hdr["X-Api-Key"] != "" && h.Get("Trailer-X-Echo-Trailer") != placeholder {
				t.Errorf("trailer = %q, want the placeholder", h.Get("Trailer-X-Echo-Trailer"))
			}
			if h.Get("Content-Encoding") != "" {
				t.Errorf("an encoded answer reached the client: %q", h.Get("Content-Encoding"))
			}
		})
	}
	var reflections int
	for _, e := range w.tp.snapshot() {
		if strings.Contains(e.Action+e.Reason+strings.Join(mapValues(e.Detail), " "), realKey) {
			t.Errorf("the real value is in an audit event: %+v", e)
		}
		if e.Event == audit.EventViolation && e.Detail["secret"] == "API_KEY" {
			reflections++
		}
	}
	if reflections == 0 {
		t.Error("no reflection event")
	}
}

// TestReflectionRedirect: a 302 from the secret's host whose Location
// carries the real value is refused (502, audited with the secret and
// "location"); the host it names never gets a request.
func TestReflectionRedirect(t *testing.T) {
	w := newInspectWorld(t, Config{Secrets: []Secret{exampleSecret()}}, echoHandler)
	next := w.plainURL("/collect")
	code, body := w.do(t, "GET", w.apiURL("/redirect?next="+url.QueryEscape(next)), map[string]string{"X-Api-Key": placeholder})
	if code != http.StatusBadGateway || !strings.Contains(body, "location carries the real value of secret API_KEY") {
		t.Errorf("got %d %q, want 502 naming the secret", code, body)
	}
	if strings.Contains(body, realKey) {
		t.Errorf("the refusal carries the value: %q", body)
	}
	w.mu.Lock()
	for _, r := range w.seen {
		if r.URL.Path == "/collect" {
			t.Errorf("the redirect's host got %s", r.URL)
		}
	}
	w.mu.Unlock()
	found := false
	for _, e := range w.tp.snapshot() {
		found = found || e.Decision == audit.DecisionDeny && e.Detail["reflection"] == "location" && e.Detail["secret"] == "API_KEY"
	}
	if !found {
		t.Errorf("no deny event for the redirect: %v", w.tp.decisions())
	}
}

// chunkReader returns data in pieces of the sizes cuts gives (cycled).
type chunkReader struct {
	data []byte
	cuts []byte
	i    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.cuts) > 0 {
		n = int(c.cuts[c.i%len(c.cuts)])%97 + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkReader) Close() error { return nil }

// naiveReplace is the whole-buffer replacement the scanner must agree
// with: at each position the longest needle that starts there, else the
// byte.
func naiveReplace(rf *reflector, b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		hit := false
		for _, n := range rf.needles { // longest first
			if bytes.HasPrefix(b[i:], n.from) {
				out = append(out, n.to...)
				i += len(n.from)
				hit = true
				break
			}
		}
		if !hit {
			out = append(out, b[i])
			i++
		}
	}
	return out
}

// FuzzScanReader: the streaming scanner, fed the answer in arbitrary
// chunks, gives exactly the whole-buffer replacement, for arbitrary
// values and answers (the value and its encodings planted in them).
func FuzzScanReader(f *testing.F) {
	f.Add("sk-real-VALUE-0123456789", []byte("a sk-real-VALUE-0123456789 b sk-real sk-real-VALUE-012345678"), []byte{1, 5, 200}, uint8(3))
	f.Add("k+/=?&key", []byte("x k%2B%2F%3D%3F%26key k+/=?&key"), []byte{2}, uint8(0))
	f.Add("aaaa", []byte("aaaaaaaaaaa"), []byte{0}, uint8(1))
	f.Add("abcdefghijklmnopqrstuvwxyz", []byte("data: {\"h\":\"YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\"}\n\n"), []byte{7, 3}, uint8(2))
	f.Fuzz(func(t *testing.T, value string, data, cuts []byte, plant uint8) {
		if value == "" || len(value) > 200 || len(data) > 1<<14 {
			return
		}
		rf := newReflector([]Secret{{Name: "S", Placeholder: "agentbox-placeholder-0123456789abcdef", Value: value}})
		// plant the value (or an encoded form) in the data
		if len(rf.needles) > 0 && len(data) > 0 {
			n := rf.needles[int(plant)%len(rf.needles)]
			at := int(plant) % (len(data) + 1)
			data = append(append(append([]byte{}, data[:at]...), n.from...), data[at:]...)
		}
		want := naiveReplace(rf, data)
		got, err := io.ReadAll(rf.reader(&chunkReader{data: data, cuts: cuts}, plant%2 == 1, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("streamed %q\nwhole    %q", got, want)
		}
		if s := rf.replaceString(string(data), nil); s != string(want) {
			t.Fatalf("replaceString %q\nwhole %q", s, want)
		}
	})
}

// TestReflectionForward: the loopback base-URL forward (ForwardHTTP, as
// an agent profile's http://127.0.0.1:PORT API is served inside) to an
// echoing upstream: the value goes only in the declared header, the
// echo reaches the client with the placeholder, a placeholder in the
// query is refused, a redirect carrying the value is refused.
func TestReflectionForward(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.Header {
			if strings.Contains(strings.Join(vs, " "), realKey) {
				mu.Lock()
				got = append(got, k)
				mu.Unlock()
			}
		}
		echoHandler(w, r)
	}))
	defer up.Close()
	port, _ := strconv.Atoi(portOf(up.URL))
	sec := exampleSecret()
	sec.Hosts = func(h string, p int) bool { return h == "127.0.0.1" && p == port }
	tp := newTestProxy(t, map[string]policy.Decision{"127.0.0.1": policy.Allow}, map[string]string{}, Config{Secrets: []Secret{sec}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go tp.p.ForwardHTTP(l, "127.0.0.1", port, "http")
	base := "http://" + l.Addr().String()
	do := func(path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		all := string(b)
		for k, vs := range resp.Header {
			all += "\n" + k + ": " + strings.Join(vs, " ")
		}
		return resp.StatusCode, all
	}
	code, out := do("/echo", map[string]string{"X-Api-Key": placeholder})
	if code != 200 || strings.Contains(out, realKey) || !strings.Contains(out, "X-Api-Key: "+placeholder) {
		t.Errorf("echo through the forward: %d\n%s", code, out)
	}
	if code, out := do("/echo?key="+placeholder, nil); code != http.StatusForbidden || !strings.Contains(out, "in the query") {
		t.Errorf("placeholder in the query: %d %s", code, out)
	}
	if code, out := do("/redirect?next=http://127.0.0.1:1/x", map[string]string{"X-Api-Key": placeholder}); code != http.StatusBadGateway || strings.Contains(out, realKey) {
		t.Errorf("redirect carrying the value: %d %s", code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "X-Api-Key" || got[1] != "X-Api-Key" {
		t.Errorf("the upstream got the value in %v; want X-Api-Key of the echo and the redirect", got)
	}
}
