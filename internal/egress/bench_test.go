package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentbox/agentbox/policy"
)

// benchPair starts a loopback upstream (a raw TCP server: it answers each
// connection's first line with "ok\n", or streams size bytes when the
// line is "stream") and a proxy allowing "up.test" mapped to it.
func benchPair(b *testing.B, size int) (upstream string, tp *testProxy) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				if line != "stream\n" {
					io.WriteString(c, "ok\n")
					return
				}
				for left := size; left > 0; left -= len(chunk) {
					if _, err := c.Write(chunk[:min(left, len(chunk))]); err != nil {
						return
					}
				}
			}()
		}
	}()
	tp = newTestProxy(b, map[string]policy.Decision{"up.test": policy.Allow}, map[string]string{"up.test": "127.0.0.1"}, Config{})
	return l.Addr().String(), tp
}

// dialDirect connects to the upstream itself.
func dialDirect(addr string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	return c, bufio.NewReader(c), nil
}

// dialProxy connects to the upstream through the proxy (CONNECT).
func dialProxy(proxy, port string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "CONNECT up.test:%s HTTP/1.1\r\nHost: up.test:%s\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT: %s", resp.Status)
	}
	return c, br, nil
}

// BenchmarkConnectionSetup: a new connection and one round trip, direct and
// through the proxy, interleaved in one loop (so both see the same machine
// state); reports each side's time per connection, the ratio and the time
// the proxy adds per connection (goal: ≤ 1 ms on loopback).
func BenchmarkConnectionSetup(b *testing.B) {
	up, tp := benchPair(b, 0)
	_, port, _ := net.SplitHostPort(up)
	var direct, proxied time.Duration
	once := func(dial func() (net.Conn, *bufio.Reader, error)) time.Duration {
		t0 := time.Now()
		c, br, err := dial()
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(c, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "ok\n" {
			b.Fatalf("round trip: %q %v", line, err)
		}
		d := time.Since(t0)
		c.Close()
		return d
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		direct += once(func() (net.Conn, *bufio.Reader, error) { return dialDirect(up) })
		proxied += once(func() (net.Conn, *bufio.Reader, error) { return dialProxy(tp.addr, port) })
	}
	n := float64(b.N)
	b.ReportMetric(float64(direct.Microseconds())/n, "direct-µs/conn")
	b.ReportMetric(float64(proxied.Microseconds())/n, "proxy-µs/conn")
	b.ReportMetric(float64(proxied-direct)/n/1e3, "added-µs/conn")
	b.ReportMetric(float64(proxied)/float64(direct), "ratio")
}

// BenchmarkThroughput: 64 MiB downloaded over one connection, direct and
// through the proxy, interleaved; reports both rates and the ratio of
// proxied to direct throughput (goal: ≥ 0.9, i.e. ≤ 1.1× the time).
func BenchmarkThroughput(b *testing.B) {
	const size = 64 << 20
	up, tp := benchPair(b, size)
	_, port, _ := net.SplitHostPort(up)
	buf := make([]byte, 256<<10)
	var direct, proxied time.Duration
	once := func(dial func() (net.Conn, *bufio.Reader, error)) time.Duration {
		c, br, err := dial()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		t0 := time.Now()
		io.WriteString(c, "stream\n")
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{br}, buf)
		if err != nil || n != size {
			b.Fatalf("read %d of %d: %v", n, size, err)
		}
		return time.Since(t0)
	}
	b.SetBytes(2 * size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		direct += once(func() (net.Conn, *bufio.Reader, error) { return dialDirect(up) })
		proxied += once(func() (net.Conn, *bufio.Reader, error) { return dialProxy(tp.addr, port) })
	}
	mb := float64(size) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/direct.Seconds(), "direct-MiB/s")
	b.ReportMetric(mb/proxied.Seconds(), "proxy-MiB/s")
	b.ReportMetric(direct.Seconds()/proxied.Seconds(), "throughput-ratio")
}
