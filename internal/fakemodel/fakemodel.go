// Package fakemodel is a scripted model API for end-to-end tests of the real
// agent CLIs (Claude Code, Codex CLI) under agentbox: it speaks enough of
// Anthropic's Messages API and OpenAI's Responses API (streaming, SSE) to
// drive an agent through a fixed list of tool calls and a final answer, and
// records every request so a test can read what the agent sent back (tool
// results, denial text).
//
// The step an agent is at is derived from the conversation it sends (the
// number of tool results in it), not from a counter, so retries and side
// requests (titles, summaries: requests without tools) do not shift the
// script.
package fakemodel

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Step is one turn of the script: a tool call, or (Tool == "") the final
// answer Text.
type Step struct {
	// Tool is the tool to call, by the agent's name for it ("Bash",
	// "Write", "shell"); Input is its arguments.
	Tool  string
	Input map[string]any
	// Text is the final answer (Tool empty), or text sent before the call.
	Text string
}

// Request is one recorded API request.
type Request struct {
	Path string
	Body map[string]any
	// Step is the script step answered (-1 for a side request).
	Step int
}

// Options are a server's optional settings.
type Options struct {
	// TLS serves HTTPS with this configuration (nil: plain HTTP).
	TLS *tls.Config
	// Keys, when set, are the only credentials accepted: any other
	// request is answered 401 (and recorded).
	Keys []string
}

// Server is the fake API. Create with Start; Close it when done.
type Server struct {
	// URL is the base URL (http://127.0.0.1:PORT), as ANTHROPIC_BASE_URL or
	// a Codex provider's base_url (URL + "/v1").
	URL    string
	script []Step
	srv    *http.Server
	ln     net.Listener

	keys []string

	mu    sync.Mutex
	reqs  []Request
	creds []string
}

// Start serves script on a loopback port.
func Start(script []Step) (*Server, error) { return StartOn("127.0.0.1:0", script) }

// StartOn serves script on addr (host:port; a container's loopback, say).
func StartOn(addr string, script []Step) (*Server, error) {
	return StartWith(addr, script, Options{})
}

// StartWith serves script on addr with opts.
func StartWith(addr string, script []Step, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln, keys: opts.Keys}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
		s.URL = "https://" + s.ln.Addr().String()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.anthropic)
	mux.HandleFunc("/v1/responses", s.responses)
	mux.HandleFunc("/v1beta/models/", s.gemini)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r.URL.Path, nil, -1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/models"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"data":[],"models":[],"object":"list"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
		}
	})
	s.srv = &http.Server{Handler: s.checkKey(mux)}
	go s.srv.Serve(ln)
	return s, nil
}

// credential is the key a request carries.
func credential(r *http.Request) string {
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return v
	}
	return r.URL.Query().Get("key")
}

// checkKey refuses requests without one of the server's keys (when set).
func (s *Server) checkKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := credential(r)
		s.mu.Lock()
		s.creds = append(s.creds, cred)
		s.mu.Unlock()
		if len(s.keys) > 0 && !slices.Contains(s.keys, cred) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"fakemodel: invalid API key"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Credentials returns the credential of every request received, in order
// ("" for a request without one).
func (s *Server) Credentials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.creds)
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// ToolResults returns the text of every tool result the agent sent back,
// in order (from the longest conversation seen).
func (s *Server) ToolResults() []string {
	var best []string
	for _, r := range s.Requests() {
		if res := toolResults(r.Body); len(res) > len(best) {
			best = res
		}
	}
	return best
}

func (s *Server) record(path string, body map[string]any, step int) {
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Path: path, Body: body, Step: step})
	s.mu.Unlock()
}

func readBody(r *http.Request) map[string]any {
	var m map[string]any
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	_ = json.Unmarshal(b, &m)
	return m
}

// toolResults lists the tool results in a request body: Anthropic
// tool_result blocks, or Responses function_call_output items.
func toolResults(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		content, _ := mm["content"].([]any)
		for _, c := range content {
			cm, _ := c.(map[string]any)
			if cm["type"] != "tool_result" {
				continue
			}
			out = append(out, flatten(cm["content"]))
		}
	}
	contents, _ := body["contents"].([]any) // Gemini: functionResponse parts
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if fr, ok := pm["functionResponse"].(map[string]any); ok {
				out = append(out, flatten(fr["response"]))
			}
		}
	}
	items, _ := body["input"].([]any)
	for _, it := range items {
		im, _ := it.(map[string]any)
		if t, _ := im["type"].(string); t == "function_call_output" || t == "custom_tool_call_output" || t == "local_shell_call_output" {
			out = append(out, flatten(im["output"]))
		}
	}
	return out
}

// flatten turns a tool result's content (a string, or blocks with text)
// into text.
func flatten(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, x := range c {
			if xm, ok := x.(map[string]any); ok {
				if t, ok := xm["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	case map[string]any:
		if t, ok := c["text"].(string); ok {
			return t
		}
		if t, ok := c["content"].(string); ok {
			return t
		}
		if t, ok := c["output"].(string); ok { // Gemini functionResponse
			return t
		}
		b, _ := json.Marshal(c)
		return string(b)
	}
	return ""
}

// hasTools reports whether the request offers the agent's tools: only
// those requests are turns of the main conversation.
func hasTools(body map[string]any, name string) bool {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if tm["name"] == name {
			return true
		}
	}
	return false
}

// step picks the script step for a main-conversation request.
func (s *Server) step(body map[string]any) int {
	n := len(toolResults(body))
	if n >= len(s.script) {
		return len(s.script) - 1
	}
	return n
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// anthropic answers POST /v1/messages.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	main := hasTools(body, "Bash") && len(s.script) > 0
	idx := -1
	st := Step{Text: "ok"}
	if main {
		idx = s.step(body)
		st = s.script[idx]
	}
	s.record(r.URL.Path, body, idx)
	model, _ := body["model"].(string)
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	var blocks []map[string]any
	if st.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": st.Text})
	}
	stop := "end_turn"
	if st.Tool != "" {
		stop = "tool_use"
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", idx), "name": st.Tool, "input": st.Input})
	}
	if stream, _ := body["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("msg_%d", idx+100), "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", idx+100), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			in, _ := json.Marshal(b["input"])
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// responses answers POST /v1/responses (OpenAI Responses API, as Codex CLI
// uses it).
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	_, hasToolList := body["tools"].([]any)
	idx := -1
	st := Step{Text: "ok"}
	if hasToolList && len(s.script) > 0 {
		idx = s.step(body)
		st = s.script[idx]
	}
	s.record(r.URL.Path, body, idx)
	id := fmt.Sprintf("resp_%d", idx+100)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	if st.Text != "" {
		item := map[string]any{"type": "message", "role": "assistant", "id": "msg_" + id,
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	}
	if st.Tool != "" {
		args, _ := json.Marshal(st.Input)
		item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": fmt.Sprintf("call_%02d", idx),
			"name": st.Tool, "arguments": string(args)}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 1, "item": item})
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15},
	}})
}

// gemini answers POST /v1beta/models/MODEL:generateContent and
// :streamGenerateContent (Gemini API, as Gemini CLI uses it). Requests
// that offer the agent's tools are turns of the script; the CLI's side
// requests get what it parses: a complexity score for its model router, a
// next speaker for its turn check, a plain text otherwise.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	main := false
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if fds, _ := tm["functionDeclarations"].([]any); len(fds) > 0 {
			main = true
		}
	}
	idx := -1
	st := Step{Text: "ok"}
	if main && len(s.script) > 0 {
		idx = s.step(body)
		st = s.script[idx]
	} else {
		sys, _ := json.Marshal(body["systemInstruction"])
		switch {
		case strings.Contains(string(sys), "Complexity Score"):
			st = Step{Text: `{"complexity_reasoning":"a scripted test","complexity_score":10}`}
		case strings.Contains(string(sys), "next_speaker") || strings.Contains(string(body2text(body)), "next_speaker"):
			st = Step{Text: `{"reasoning":"the model answered","next_speaker":"user"}`}
		}
	}
	s.record(r.URL.Path, body, idx)
	var parts []any
	if st.Text != "" {
		parts = append(parts, map[string]any{"text": st.Text})
	}
	if st.Tool != "" {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": st.Tool, "args": st.Input}})
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "fake",
	}
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func body2text(body map[string]any) []byte {
	b, _ := json.Marshal(body)
	return b
}

// Saw reports whether any request the agent sent contains text (in its
// system prompt, messages or tool results).
func (s *Server) Saw(text string) bool {
	for _, r := range s.Requests() {
		b, _ := json.Marshal(r.Body)
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}
