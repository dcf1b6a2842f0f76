package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/capfield"
	"github.com/agentbox/agentbox/internal/shellquote"
)

// protocolVersion is sent in the server's hello line. It changes only when an
// existing message changes meaning; new optional fields do not bump it.
const protocolVersion = 1

// maxLineBytes bounds one protocol line in either direction.
const maxLineBytes = 64 << 10

// Server-to-client messages. See docs/approval-protocol.md.
type (
	helloMsg struct {
		Type    string `json:"type"` // "hello"
		Version int    `json:"version"`
		Server  string `json:"server"`
	}
	requestMsg struct {
		Type    string `json:"type"` // "request"
		ID      string `json:"id"`
		Agent   string `json:"agent"`
		Role    string `json:"role"`
		Run     string `json:"run,omitempty"`
		Pid     int    `json:"pid"`
		Program string `json:"program"`
		// Identified says how agentbox identified the program; Env are the
		// environment variables that change what it runs or loads.
		Identified string   `json:"identified,omitempty"`
		Argv       []string `json:"argv"`
		Parent     []string `json:"parent,omitempty"`
		Env        []string `json:"env,omitempty"`
		Cwd        string   `json:"cwd"`
		Action     string   `json:"action"`
		Rule       string   `json:"rule"`
		Layer      string   `json:"layer,omitempty"`
		Reason     string   `json:"reason"`
		Deadline   string   `json:"deadline"` // RFC 3339 with fractional seconds
	}
	cancelMsg struct {
		Type   string `json:"type"` // "cancel"
		ID     string `json:"id"`
		Reason string `json:"reason"` // "timeout", "answered", "canceled", "closed"
	}
	ackMsg struct {
		Type   string `json:"type"` // "ack"
		ID     string `json:"id"`
		Answer string `json:"answer"`
	}
	errorMsg struct {
		Type    string `json:"type"` // "error"
		ID      string `json:"id,omitempty"`
		Message string `json:"message"`
	}
)

func newRequestMsg(req Request, deadline time.Time) requestMsg {
	argv := req.Argv
	if argv == nil {
		argv = []string{}
	}
	return requestMsg{
		Type: "request", ID: req.ID, Agent: req.Agent, Role: req.Role, Run: req.Run,
		Pid: req.Pid, Program: req.Program, Identified: req.Identified, Argv: argv, Parent: req.Parent, Env: req.Env, Cwd: req.Cwd, Action: req.Action,
		Rule: req.Rule, Layer: req.Layer, Reason: req.Reason,
		Deadline: deadline.UTC().Format(time.RFC3339Nano),
	}
}

// requestLine encodes a request as one protocol line of at most
// maxLineBytes: the sandbox chooses argv, env, paths and the action (a
// 1 MB argv is one exec away), so values are cut, with capfield's marker
// of the whole, to budgets halved until the line fits.
func requestLine(req Request, deadline time.Time) []byte {
	m := newRequestMsg(req, deadline)
	line := encodeLine(m)
	for word, total := 4<<10, 24<<10; len(line) > maxLineBytes && word > 16; word, total = word/2, total/2 {
		c := m
		c.Argv = capfield.Words(m.Argv, word, total)
		c.Parent = capfield.Words(m.Parent, word, total/2)
		c.Env = capfield.Words(m.Env, word, total/2)
		for _, f := range []*string{&c.Program, &c.Identified, &c.Cwd, &c.Action, &c.Rule, &c.Reason, &c.Agent, &c.Role, &c.Run} {
			*f = capfield.Value(*f, word)
		}
		line = encodeLine(c)
	}
	return line
}

// clientMessage is one decoded client line. The only client message is a
// response: {"type":"response","id":"...","answer":"...","prefix":"..."}.
type clientMessage struct {
	ID     string
	Answer Answer
	Prefix string
}

// parseClientLine decodes one line from an approval client. It is strict: the
// line must be a single JSON object whose "type" is exactly "response", whose
// "id" is a non-empty string and whose "answer" is exactly one of the five
// answer names; keys are matched case-sensitively and a key given twice is an
// error. Unknown keys are ignored for forward compatibility. Anything else is
// an error, never an answer, so garbage can never become an allow.
func parseClientLine(line []byte) (clientMessage, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return clientMessage{}, errors.New("empty line")
	}
	if len(line) > maxLineBytes {
		return clientMessage{}, fmt.Errorf("line of %d bytes exceeds %d", len(line), maxLineBytes)
	}
	fields, err := decodeObject(line)
	if err != nil {
		return clientMessage{}, err
	}
	str := func(key string, required bool) (string, error) {
		raw, ok := fields[key]
		if !ok {
			if required {
				return "", fmt.Errorf("missing %q", key)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%q must be a string", key)
		}
		return s, nil
	}
	typ, err := str("type", true)
	if err != nil {
		return clientMessage{}, err
	}
	if typ != "response" {
		return clientMessage{}, fmt.Errorf("unknown message type %q (want response)", typ)
	}
	var m clientMessage
	if m.ID, err = str("id", true); err != nil {
		return clientMessage{}, err
	}
	if m.ID == "" {
		return clientMessage{}, errors.New(`"id" is empty`)
	}
	ans, err := str("answer", true)
	if err != nil {
		return clientMessage{}, err
	}
	if m.Answer, err = ParseAnswer(ans); err != nil {
		return clientMessage{}, err
	}
	if m.Prefix, err = str("prefix", false); err != nil {
		return clientMessage{}, err
	}
	if m.Prefix != "" && m.Answer != Remember {
		return clientMessage{}, fmt.Errorf(`"prefix" is only valid with answer "remember", got %q`, ans)
	}
	return m, nil
}

// decodeObject decodes exactly one JSON object into its raw members, refusing
// duplicate keys and trailing data.
func decodeObject(line []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("malformed message: want a JSON object")
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("malformed JSON: object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("malformed JSON value for %q: %w", key, err)
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed message: trailing data after the JSON object")
	}
	return fields, nil
}

// checkPrefix verifies that prefix, split on spaces, is a word prefix of argv
// (argv[0] may be matched by its base name), so a client cannot ask to
// remember a rule for a command other than the one it was shown.
func checkPrefix(prefix string, req Request) error {
	words := strings.Fields(prefix)
	if len(words) == 0 {
		return errors.New("prefix is blank")
	}
	if len(words) > len(req.Argv) {
		return fmt.Errorf("prefix %q is longer than argv", prefix)
	}
	for i, w := range words {
		a := req.Argv[i]
		if i == 0 && w != a && w == baseName(a) {
			continue
		}
		if w != a {
			return fmt.Errorf("prefix %q is not a prefix of argv %s", prefix, shellquote.Display(req.Argv))
		}
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
