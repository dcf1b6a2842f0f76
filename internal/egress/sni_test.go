package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"testing"
)

// clientHello captures the ClientHello crypto/tls sends for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	go func() {
		tls.Client(c1, &tls.Config{ServerName: serverName, InsecureSkipVerify: serverName == ""}).Handshake()
		c1.Close()
	}()
	var buf bytes.Buffer
	b := make([]byte, 4096)
	for {
		n, err := c2.Read(b)
		buf.Write(b[:n])
		if err != nil || buf.Len() >= 5 && buf.Len() >= 5+int(buf.Bytes()[3])<<8|int(buf.Bytes()[4]) {
			break
		}
	}
	c2.Close()
	return buf.Bytes()
}

func TestReadClientHello(t *testing.T) {
	for _, name := range []string{"example.com", "api.agentbox.test", ""} {
		hello := clientHello(t, name)
		raw, sni, isTLS, err := readClientHello(bufio.NewReader(bytes.NewReader(append(hello, "after"...))))
		if err != nil || !isTLS || sni != name || !bytes.Equal(raw, hello) {
			t.Errorf("%q: sni %q tls %v err %v, raw %d of %d bytes", name, sni, isTLS, err, len(raw), len(hello))
		}
	}
	if _, _, isTLS, err := readClientHello(bufio.NewReader(bytes.NewReader([]byte("GET / HTTP/1.1\r\n")))); isTLS || err != nil {
		t.Errorf("plain text taken for TLS: %v %v", isTLS, err)
	}
}

func FuzzReadClientHello(f *testing.F) {
	f.Add(clientHello(f, "example.com"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		readClientHello(bufio.NewReader(bytes.NewReader(data)))
	})
}
