// Package collectortest runs a real OpenTelemetry Collector for tests:
// test/otelcol (the collector's OTLP receiver and file exporter, in a Go
// module of its own so agentbox's go.mod stays small), built once per
// source version into a cache directory, listening on two loopback ports.
// It links no OpenTelemetry code itself: it starts the collector's binary
// and reads its file exporter's output with audit/fleet.
package collectortest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit/fleet"
)

// repoDir is test/otelcol of this checkout (found from this source file).
func repoDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("no source location")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "test", "otelcol"), nil
}

// Binary builds test/otelcol (an OpenTelemetry Collector with
// the OTLP receiver and the file exporter, in a module of its own) once
// per source version into a cache directory and returns its path. The
// build runs at nice 19: the machine is shared.
func Binary(t testing.TB) string {
	t.Helper()
	src, err := repoDir()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatalf("collector source: %v", err)
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version()))
	cache := os.Getenv("AGENTBOX_TEST_CACHE")
	if cache == "" {
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			cache = filepath.Join(x, "agentbox-test")
		} else {
			cache = "/var/cache/agentbox-test"
		}
	}
	bin := filepath.Join(cache, "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Skipf("no cache directory for the collector binary (%v): cannot build the test collector", err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	t0 := time.Now()
	cmd := exec.Command("nice", "-n", "19", gobin, "build", "-o", tmp, ".")
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		t.Skipf("cannot build the test OpenTelemetry Collector from test/otelcol (its Go modules must be reachable): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the test collector in %v: %s", time.Since(t0).Round(time.Millisecond), bin)
	return bin
}

// Collector is a running test collector (Start).
type Collector struct {
	t                  testing.TB
	bin, cfg, out, dir string
	GRPC, HTTP         string // listen addresses
	cmd                *exec.Cmd
	done               chan error
	starts             int
}

// FreePort is a loopback address nothing listens on (yet).
func FreePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start runs the test collector on two loopback ports (gRPC and
// HTTP), writing what it receives to dir/received.json.
func Start(t testing.TB, dir string) *Collector {
	c := &Collector{t: t, bin: Binary(t), dir: dir, GRPC: FreePort(t), HTTP: FreePort(t)}
	c.Start()
	t.Cleanup(c.Stop)
	return c
}

// config writes the collector's configuration; each start writes to a
// file of its own (the file exporter truncates its file when it starts).
func (c *Collector) config() {
	c.starts++
	c.out = filepath.Join(c.dir, fmt.Sprintf("received-%d.json", c.starts))
	c.cfg = filepath.Join(c.dir, "otelcol.yaml")
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file]
`, c.GRPC, c.HTTP, c.out)
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Collector) Start() {
	c.t.Helper()
	c.config()
	c.cmd = exec.Command(c.bin, "--config", "file:"+c.cfg)
	logf, err := os.OpenFile(filepath.Join(c.dir, "otelcol.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
	c.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(c.cmd, c.done)
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range []string{c.GRPC, c.HTTP} {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case err := <-c.done:
				log, _ := os.ReadFile(filepath.Join(c.dir, "otelcol.log"))
				c.t.Fatalf("collector exited at start: %v\n%s", err, log)
			default:
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(c.dir, "otelcol.log"))
				c.t.Fatalf("collector not listening on %s after 30s\n%s", addr, log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Pid is the running collector's process id.
func (c *Collector) Pid() int { return c.cmd.Process.Pid }

// Stop ends the collector with SIGTERM (it flushes the file exporter)
// and waits for it.
func (c *Collector) Stop() {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// Received reads what the collector's file exporter wrote, over all its
// starts.
func (c *Collector) Received() ([]fleet.Line, error) {
	var lines []fleet.Line
	for i := 1; i <= c.starts; i++ {
		name := filepath.Join(c.dir, fmt.Sprintf("received-%d.json", i))
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The file exporter may be mid-way through a line: read whole ones.
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if err := fleet.ReadOTLPJSON(bytes.NewReader(b), name, func(l fleet.Line) { lines = append(lines, l) }); err != nil {
			return nil, err
		}
	}
	return lines, nil
}

// WaitReceived polls until the collector wrote n records.
func (c *Collector) WaitReceived(n int) []fleet.Line {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		lines, err := c.Received()
		if err != nil {
			c.t.Fatal(err)
		}
		if len(lines) >= n || time.Now().After(deadline) {
			if len(lines) < n {
				log, _ := os.ReadFile(filepath.Join(c.dir, "otelcol.log"))
				c.t.Fatalf("collector wrote %d records, want %d\n%s", len(lines), n, strings.TrimSpace(string(log)))
			}
			return lines
		}
		time.Sleep(50 * time.Millisecond)
	}
}
