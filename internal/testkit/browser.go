package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Browser is a real headless Chromium driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe: commands on fd 3, replies on fd 4,
// each message NUL-terminated), so tests click and type into real pages
// with real input events and no driver in between.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	in      *os.File // our end of fd 3
	session string

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpReply
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// FindBrowser returns the path of Chromium, or "" when none is installed.
func FindBrowser() string {
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// StartBrowser starts headless Chromium with one page open; it is
// stopped when the test ends. It skips the test (saying why) when no
// Chromium is installed.
func StartBrowser(t testing.TB) *Browser {
	t.Helper()
	path := FindBrowser()
	if path == "" {
		t.Skip("reason: no Chromium installed (.ci/run installs Debian's chromium)")
	}
	// Its own profile directory, removed once every browser process is
	// gone (t.TempDir's cleanup could race the helpers' last writes).
	profile, err := os.MkdirTemp("", "agentbox-browser-")
	if err != nil {
		t.Fatal(err)
	}
	cmdR, cmdW, err := os.Pipe() // fd 3: commands to the browser
	if err != nil {
		t.Fatal(err)
	}
	resR, resW, err := os.Pipe() // fd 4: its replies
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--remote-debugging-pipe", "--user-data-dir="+profile, "--window-size=1200,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, resW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers with it, killed together
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	cmdR.Close()
	resW.Close()
	b := &Browser{t: t, cmd: cmd, in: cmdW, waiting: map[int]chan cdpReply{}, done: make(chan struct{})}
	go b.read(resR)
	t.Cleanup(func() {
		cmdW.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(20 * time.Millisecond) // a helper outside the group still exiting
		}
	})
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	b.call("", "Target.getTargets", nil, &targets)
	id := ""
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			id = ti.TargetID
		}
	}
	if id == "" {
		var ct struct {
			TargetID string `json:"targetId"`
		}
		b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &ct)
		id = ct.TargetID
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}, &at)
	b.session = at.SessionID
	b.Call("Page.enable", nil, nil)
	b.Call("Runtime.enable", nil, nil)
	return b
}

func (b *Browser) read(r *os.File) {
	defer close(b.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m) != nil || m.ID == 0 {
			continue // an event
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command (to the page's session when session is set) and
// decodes its result into out.
func (b *Browser) call(session, method string, params any, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Browser) try(session, method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	if session != "" {
		m["sessionId"] = session
	}
	data, _ := json.Marshal(m)
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("browser %s: %v", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("browser %s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("browser %s: the browser exited", method)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("browser %s: no reply in 30s", method)
	}
}

// Call sends a DevTools command to the page.
func (b *Browser) Call(method string, params any, out any) {
	b.t.Helper()
	b.call(b.session, method, params, out)
}

// Navigate opens url in the page.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.Call("Page.navigate", map[string]any{"url": url}, nil)
}

// Eval evaluates a JavaScript expression in the page and decodes its
// (JSON-serializable) value into out.
func (b *Browser) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		d := r.ExceptionDetails.Text
		if r.ExceptionDetails.Exception != nil {
			d = r.ExceptionDetails.Exception.Description
		}
		return fmt.Errorf("javascript %q: %s", expr, d)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// WaitJS waits until the JavaScript expression is true, up to timeout.
func (b *Browser) WaitJS(what, expr string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		var ok bool
		if last = b.Eval("!!("+expr+")", &ok); last == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			var body string
			b.Eval("document.body ? document.body.innerText : ''", &body)
			b.t.Fatalf("browser: %s: not within %v (last error %v); page text:\n%s", what, timeout, last, body)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Click clicks the centre of the first element matching selector with
// real mouse events (press and release).
func (b *Browser) Click(selector string) {
	b.t.Helper()
	if err := b.click(selector); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// TryClick is Click that reports a missing element instead of failing
// the test (an element a live page may re-render away).
func (b *Browser) TryClick(selector string) bool { return b.click(selector) == nil }

func (b *Browser) click(selector string) error {
	var box struct{ X, Y float64 }
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return null; e.scrollIntoView({block: "center"});
		const r = e.getClientRects()[0] || e.getBoundingClientRect(); return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, selector)
	var raw json.RawMessage
	if err := b.Eval(js, &raw); err != nil || string(raw) == "null" || json.Unmarshal(raw, &box) != nil {
		return fmt.Errorf("click %s: no such element (%v)", selector, err)
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.Call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1}, nil)
	}
	return nil
}

// Key types one key (a printable character, or "Enter"/"Escape") as
// real keyboard events.
func (b *Browser) Key(key string) {
	b.t.Helper()
	down := map[string]any{"type": "keyDown", "key": key}
	switch key {
	case "Enter":
		down["code"], down["windowsVirtualKeyCode"], down["text"] = "Enter", 13, "\r"
	case "Escape":
		down["code"], down["windowsVirtualKeyCode"] = "Escape", 27
	default:
		down["text"] = key
		if len(key) == 1 && key[0] >= 'A' && key[0] <= 'Z' {
			down["modifiers"] = 8 // shift
		}
	}
	b.Call("Input.dispatchKeyEvent", down, nil)
	b.Call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key}, nil)
}

// Screenshot saves a PNG of the page to path.
func (b *Browser) Screenshot(path string) error {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.try(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
