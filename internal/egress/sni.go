package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// readClientHello reads a TLS ClientHello from r without consuming it
// from the stream's point of view: it returns the bytes read (to be sent
// on upstream first) and the server name (SNI) the client asked for ("" when
// the hello has none). It does not read past the hello's record(s). A
// stream that does not start with a TLS handshake record returns isTLS
// false and the bytes read so far.
func readClientHello(r *bufio.Reader) (raw []byte, sni string, isTLS bool, err error) {
	first, err := r.Peek(1)
	if err != nil {
		return nil, "", false, err
	}
	if first[0] != 0x16 { // not a TLS handshake record
		return nil, "", false, nil
	}
	var hs []byte // handshake bytes across records
	need := -1    // handshake message length once known
	for need < 0 || len(hs) < need+4 {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return raw, "", true, fmt.Errorf("TLS record header: %w", err)
		}
		raw = append(raw, hdr[:]...)
		if hdr[0] != 0x16 {
			return raw, "", true, errors.New("TLS: expected a handshake record")
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > 1<<14+2048 {
			return raw, "", true, fmt.Errorf("TLS: bad record length %d", n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return raw, "", true, fmt.Errorf("TLS record: %w", err)
		}
		raw = append(raw, body...)
		hs = append(hs, body...)
		if need < 0 && len(hs) >= 4 {
			if hs[0] != 1 {
				return raw, "", true, errors.New("TLS: first handshake message is not a ClientHello")
			}
			need = int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])
			if need > 1<<16 {
				return raw, "", true, errors.New("TLS: ClientHello too large")
			}
		}
		if len(raw) > 1<<17 {
			return raw, "", true, errors.New("TLS: ClientHello spans too many records")
		}
	}
	sni, err = parseSNI(hs[4 : need+4])
	return raw, sni, true, err
}

// parseSNI extracts the host_name of the server_name extension from a
// ClientHello body (after the 4-byte handshake header).
func parseSNI(b []byte) (string, error) {
	bad := errors.New("TLS: malformed ClientHello")
	skip := func(n int) bool {
		if len(b) < n {
			return false
		}
		b = b[n:]
		return true
	}
	vec := func(lenBytes int) ([]byte, bool) {
		if len(b) < lenBytes {
			return nil, false
		}
		n := 0
		for i := 0; i < lenBytes; i++ {
			n = n<<8 | int(b[i])
		}
		if len(b) < lenBytes+n {
			return nil, false
		}
		v := b[lenBytes : lenBytes+n]
		b = b[lenBytes+n:]
		return v, true
	}
	if !skip(2 + 32) { // version, random
		return "", bad
	}
	if _, ok := vec(1); !ok { // session id
		return "", bad
	}
	if _, ok := vec(2); !ok { // cipher suites
		return "", bad
	}
	if _, ok := vec(1); !ok { // compression methods
		return "", bad
	}
	if len(b) == 0 {
		return "", nil // no extensions
	}
	exts, ok := vec(2)
	if !ok {
		return "", bad
	}
	for len(exts) >= 4 {
		typ := int(exts[0])<<8 | int(exts[1])
		n := int(exts[2])<<8 | int(exts[3])
		if len(exts) < 4+n {
			return "", bad
		}
		data := exts[4 : 4+n]
		exts = exts[4+n:]
		if typ != 0 { // server_name
			continue
		}
		if len(data) < 2 {
			return "", bad
		}
		list := data[2:]
		for len(list) >= 3 {
			nameType := list[0]
			l := int(list[1])<<8 | int(list[2])
			if len(list) < 3+l {
				return "", bad
			}
			if nameType == 0 {
				return string(list[3 : 3+l]), nil
			}
			list = list[3+l:]
		}
		return "", bad
	}
	return "", nil
}
