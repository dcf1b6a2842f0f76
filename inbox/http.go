package inbox

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy/remember"
)

//go:embed page
var pageFS embed.FS

// The page's content security policy: its own script and style only, no
// inline code, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxBody bounds a request body of the API.
const maxBody = 16 << 10

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	static := func(name, ctype string) http.HandlerFunc {
		b, err := pageFS.ReadFile("page/" + name)
		if err != nil {
			panic(err) // embedded at build time
		}
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Write(b)
		}
	}
	index := static("index.html", "text/html; charset=utf-8")
	mux.HandleFunc("GET /{$}", index)
	mux.HandleFunc("GET /login", index)
	mux.HandleFunc("GET /app.js", static("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", static("app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("POST /api/login", s.apiLogin)
	mux.HandleFunc("POST /api/logout", s.authed(s.apiLogout))
	mux.HandleFunc("GET /api/whoami", s.authed(func(w http.ResponseWriter, r *http.Request, who string) {
		writeJSON(w, http.StatusOK, map[string]string{"user": userOf(who)})
	}))
	mux.HandleFunc("GET /api/asks", s.authed(func(w http.ResponseWriter, r *http.Request, who string) {
		writeJSON(w, http.StatusOK, map[string]any{"now": time.Now().UTC(), "asks": s.Asks()})
	}))
	mux.HandleFunc("POST /api/asks/{id}", s.authed(s.apiAnswer))
	mux.HandleFunc("GET /api/stream", s.authed(s.apiStream))
	mux.HandleFunc("GET /api/rules", s.authed(s.apiRules))
	mux.HandleFunc("POST /api/rules/revoke", s.authed(s.apiRevoke))
	mux.HandleFunc("POST /api/project-rules/revoke", s.authed(s.apiProjectRevoke))
	mux.HandleFunc("GET /api/history", s.authed(s.apiHistory))
	mux.HandleFunc("GET /api/event", s.authed(s.apiEvent))
	return s.guard(mux)
}

// guard applies to every request: the Host header must be the inbox's
// own (a page elsewhere cannot reach it through DNS rebinding), responses
// carry the security headers, and no cross-origin access is granted (no
// CORS headers are ever sent).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if s.tls {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if !s.hosts[r.Host] {
			writeJSON(w, http.StatusMisdirectedRequest, apiError{fmt.Sprintf("host %q is not this inbox's address", r.Host)})
			return
		}
		if r.Method == http.MethodPost {
			// A cross-site form or fetch: refused before any handler. JSON
			// bodies only (a form cannot send them without CORS, which is
			// never granted).
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
				writeJSON(w, http.StatusForbidden, apiError{"cross-origin request refused (Sec-Fetch-Site: " + site + ")"})
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !s.sameOrigin(o) {
				writeJSON(w, http.StatusForbidden, apiError{"cross-origin request refused (Origin: " + o + ")"})
				return
			}
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, apiError{"want Content-Type: application/json"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) sameOrigin(origin string) bool {
	scheme := "http://"
	if s.tls {
		scheme = "https://"
	}
	return strings.HasPrefix(origin, scheme) && s.hosts[strings.TrimPrefix(origin, scheme)]
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// authed passes the request on with who is asking ("user=NAME
// addr=IP:PORT"): a session cookie or an API token (Authorization:
// Bearer). Anything else is a 401.
func (s *Server) authed(fn func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user := ""
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			user = s.auth.userOfToken(strings.TrimPrefix(h, "Bearer "))
		} else if c, err := r.Cookie(cookieName); err == nil {
			user = s.auth.session(c.Value)
		}
		if user == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox inbox"`)
			writeJSON(w, http.StatusUnauthorized, apiError{"log in first: open the login URL `agentbox inbox` printed, or send Authorization: Bearer TOKEN (" + s.auth.file + ")"})
			return
		}
		fn(w, r, "user="+user+" addr="+r.RemoteAddr)
	}
}

func userOf(who string) string {
	u, _, _ := strings.Cut(strings.TrimPrefix(who, "user="), " ")
	return u
}

// decodeBody decodes a JSON request body strictly into v: one object,
// no unknown fields, nothing after it.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed request body: %w", err)
	}
	if dec.More() {
		return errors.New("malformed request body: data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed request body: data after the JSON object")
	}
	return nil
}

func (s *Server) apiLogin(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code  string `json:"code"`
		Token string `json:"token"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	sess, user, err := s.auth.login(body.Code, body.Token)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, errTooMany) {
			status = http.StatusTooManyRequests
		}
		s.log.Warn("inbox: login refused", "addr", r.RemoteAddr, "err", err)
		writeJSON(w, status, apiError{err.Error()})
		return
	}
	s.log.Info("inbox: login", "user", user, "addr", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: sess, Path: "/", HttpOnly: true, Secure: s.tls,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionLife / time.Second)})
	writeJSON(w, http.StatusOK, map[string]string{"user": user})
}

func (s *Server) apiLogout(w http.ResponseWriter, r *http.Request, _ string) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.auth.logout(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.tls, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]string{})
}

func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request, who string) {
	var body struct {
		Answer string `json:"answer"`
		Prefix string `json:"prefix,omitempty"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	status, msg := s.Answer(r.PathValue("id"), body.Answer, body.Prefix, who)
	if status != http.StatusOK {
		writeJSON(w, status, apiError{msg})
		return
	}
	writeJSON(w, status, map[string]string{"result": msg, "answer": body.Answer, "by": who})
}

// apiStream is the page's live feed (server-sent events): a "change"
// event with the inbox's version whenever asks or rules change, and a
// comment every 15 s to keep proxies from closing it.
func (s *Server) apiStream(w http.ResponseWriter, r *http.Request, _ string) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apiError{"streaming unsupported"})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	shown := ^uint64(0)
	for {
		v, ch := s.current()
		if v != shown {
			shown = v
			if _, err := fmt.Fprintf(w, "event: change\ndata: %d\n\n", v); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-ch:
		case <-tick.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// projectFile is one project policy with its rules.
type projectFile struct {
	File  string           `json:"file"`
	Rules []remember.Saved `json:"rules"`
	Error string           `json:"error,omitempty"`
}

func (s *Server) apiRules(w http.ResponseWriter, r *http.Request, _ string) {
	var files []projectFile
	for _, p := range s.policies() {
		pf := projectFile{File: p, Rules: []remember.Saved{}}
		if l, err := remember.List(p); err != nil {
			pf.Error = err.Error()
		} else if l != nil {
			pf.Rules = l
		}
		files = append(files, pf)
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": s.Runs(), "project": files})
}

func (s *Server) apiRevoke(w http.ResponseWriter, r *http.Request, who string) {
	var body struct {
		Run string `json:"run"`
		ID  string `json:"id"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	status, msg := s.Revoke(body.Run, body.ID, who)
	if status != http.StatusOK {
		writeJSON(w, status, apiError{msg})
		return
	}
	writeJSON(w, status, map[string]string{"result": msg})
}

// apiProjectRevoke removes a rule from a project policy: only a file a
// run attached with names, only the rule shown (its text must match).
func (s *Server) apiProjectRevoke(w http.ResponseWriter, r *http.Request, who string) {
	var body struct {
		File string `json:"file"`
		Key  string `json:"key"`
		Text string `json:"text"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	if !slices.Contains(s.policies(), body.File) {
		writeJSON(w, http.StatusNotFound, apiError{fmt.Sprintf("%q is not the project policy of a run this inbox serves", body.File)})
		return
	}
	removed, err := remember.RemoveRule(body.File, body.Key, body.Text)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, remember.ErrChanged) {
			status = http.StatusConflict
		}
		writeJSON(w, status, apiError{err.Error()})
		return
	}
	s.log.Info("inbox: project rule revoked", "file", body.File, "rule", body.Key, "by", who)
	s.auditEvent(audit.Event{Event: audit.EventRevoke, Approver: "inbox " + who, Rule: body.Key,
		Reason: "removed from the project policy " + body.File + ": " + strings.TrimSpace(removed)})
	s.mu.Lock()
	s.bumpLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"result": "revoked", "removed": removed})
}

// historyRow is one answered ask or refusal from an audit log.
type historyRow struct {
	Log      int       `json:"log"`
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Agent    string    `json:"agent,omitempty"`
	Run      string    `json:"run,omitempty"`
	Role     string    `json:"role,omitempty"`
	Event    string    `json:"event"`
	Action   string    `json:"action,omitempty"`
	Decision string    `json:"decision"`
	Rule     string    `json:"rule,omitempty"`
	Approver string    `json:"approver,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// tailBytes is how much of each audit log the history reads (its end).
const tailBytes = 32 << 20

// apiHistory lists answered asks and refusals from the audit logs of the
// runs seen (and the inbox's own), newest first, filtered by agent, run,
// rule and decision.
func (s *Server) apiHistory(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	f := audit.Filter{Agent: q.Get("agent"), Run: q.Get("run"), Rule: q.Get("rule")}
	decision := q.Get("decision")
	limit := 200
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= 2000 {
		limit = n
	}
	logs := s.logs()
	var rows []historyRow
	var problems []string
	for i, path := range logs {
		err := scanTail(path, f, func(e audit.Event) {
			if !(e.Event == audit.EventAsk || strings.HasPrefix(e.Decision, "ask_") || audit.Refused(e.Decision)) {
				return
			}
			if decision != "" && e.Decision != decision {
				return
			}
			rows = append(rows, historyRow{Log: i, Seq: e.Seq, Time: e.Time, Agent: e.Agent, Run: e.Run, Role: e.Role,
				Event: e.Event, Action: e.Action, Decision: e.Decision, Rule: e.Rule, Approver: e.Approver, Reason: e.Reason})
		})
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	slices.SortStableFunc(rows, func(a, b historyRow) int { return b.Time.Compare(a.Time) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	if rows == nil {
		rows = []historyRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"logs": logs, "rows": rows, "problems": problems})
}

// scanTail reads the last tailBytes of an audit log and passes the
// events that match f to fn; malformed lines are skipped.
func scanTail(path string, f audit.Filter, fn func(audit.Event)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	var rd io.Reader = file
	if st, err := file.Stat(); err == nil && st.Size() > tailBytes {
		file.Seek(st.Size()-tailBytes, io.SeekStart)
		br := bufio.NewReader(file)
		br.ReadString('\n') // a partial first line
		rd = br
	}
	return audit.Scan(rd, f, func(e audit.Event) error { fn(e); return nil }, func(*audit.LineError) error { return nil })
}

// apiEvent returns one audit event: ?log=N (index in history's logs)
// &seq=S.
func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request, _ string) {
	logs := s.logs()
	i, err := strconv.Atoi(r.URL.Query().Get("log"))
	if err != nil || i < 0 || i >= len(logs) {
		writeJSON(w, http.StatusBadRequest, apiError{"log: want an index into the history's logs"})
		return
	}
	seq, err := strconv.ParseUint(r.URL.Query().Get("seq"), 10, 64)
	if err != nil || seq == 0 {
		writeJSON(w, http.StatusBadRequest, apiError{"seq: want a positive event number"})
		return
	}
	var found *audit.Event
	scanTail(logs[i], audit.Filter{}, func(e audit.Event) {
		if e.Seq == seq {
			found = &e
		}
	})
	if found == nil {
		writeJSON(w, http.StatusNotFound, apiError{fmt.Sprintf("no event %d in %s", seq, logs[i])})
		return
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(map[string]any{"log": logs[i], "event": found})
	w.Header().Set("Content-Type", "application/json")
	w.Write(buf.Bytes())
}
