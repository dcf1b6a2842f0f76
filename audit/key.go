package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	hash2 "hash"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Keyed integrity. The hash chain alone is unkeyed: anyone who can write
// the log can recompute a forged one that verifies. A keyed log carries,
// as the last two fields of every line, the id of the key ("kid": the first
// 16 hex digits of the key's SHA-256) and an HMAC-SHA256 of the line's
// bytes before them ("mac"). Without the key a changed line cannot be given
// a valid MAC, so a forged log fails keyed verification. The chain hash
// (Prev) covers the whole line, MAC included.
//
// The key lives in a file outside every sandbox: by default <log>.key,
// created on first use with mode 0600 (32 random bytes, hex), or any file
// named with --audit-key / AGENTBOX_AUDIT_KEY. Rotating the key: write a
// new key file (or move the old one aside); new lines carry the new kid,
// and `agentbox audit verify --key OLD --key NEW` checks lines of both.

// KeySuffix names a log's default key file.
const KeySuffix = ".key"

// Key is an HMAC key with its id.
type Key struct {
	ID    string
	Bytes []byte
}

// NewKey wraps key bytes with their id.
func NewKey(b []byte) Key {
	sum := sha256.Sum256(b)
	return Key{ID: hex.EncodeToString(sum[:8]), Bytes: b}
}

// LoadKey reads a key file (hex, one line). With create, a missing file is
// created with a fresh random key, mode 0600. A key file readable or
// writable by others is refused: it would no longer be a secret.
func LoadKey(path string, create bool) (Key, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Key{}, fmt.Errorf("audit key %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if errors.Is(err, os.ErrExist) {
			return LoadKey(path, false) // created by another writer meanwhile
		}
		if err != nil {
			return Key{}, fmt.Errorf("audit key %s: %w", path, err)
		}
		_, werr := f.WriteString(hex.EncodeToString(b[:]) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return Key{}, fmt.Errorf("audit key %s: %w", path, werr)
		}
		return NewKey(b[:]), nil
	}
	if err != nil {
		return Key{}, fmt.Errorf("audit key %s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return Key{}, fmt.Errorf("audit key %s: readable or writable by group or others (mode %04o); chmod 600 it", path, st.Mode().Perm())
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(b) < 16 {
		return Key{}, fmt.Errorf("audit key %s: want at least 16 bytes as hex on one line", path)
	}
	return NewKey(b), nil
}

// sign appends kid and mac to an encoded line ("{...}\n"). The MAC is an
// HMAC of the SHA-256 of the signed part (the line up to and including
// its kid), marked by the prefix "s:" (macDigestPrefix): verifying it
// then needs one pass of SHA-256 over the line, which also gives the
// line's chain hash (digestMAC). Lines written before carry an HMAC of
// the signed bytes themselves, as plain hex; checkMAC accepts both.
func (k Key) sign(line []byte) []byte {
	body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("}"))
	out := make([]byte, 0, len(line)+110)
	out = append(out, body...)
	out = append(out, `,"kid":"`+k.ID+`"`...)
	sum := sha256.Sum256(out)
	out = append(out, `,"mac":"`+macDigestPrefix+hex.EncodeToString(k.macOf(sum[:]))+`"}`+"\n"...)
	return out
}

// macDigestPrefix marks a MAC made over the signed part's SHA-256.
const macDigestPrefix = "s:"

// macOf is the HMAC-SHA-256 of b under k.
func (k Key) macOf(b []byte) []byte {
	m := hmac.New(sha256.New, k.Bytes)
	m.Write(b)
	return m.Sum(nil)
}

// macSuffix finds the `,"mac":"<hex>"}` ending of a signed line (without
// its newline) and returns the signed part and the MAC.
func macSuffix(line []byte) (signed []byte, mac string, ok bool) {
	i := bytes.LastIndex(line, []byte(`,"mac":"`))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, "", false
	}
	return line[:i], string(line[i+len(`,"mac":"`) : len(line)-2]), true
}

// checkMAC verifies a signed line (without newline) with k: a digest MAC
// ("s:" + hex) or, in lines written before, a MAC of the signed bytes.
func (k Key) checkMAC(line []byte) bool {
	signed, mac, ok := macSuffix(line)
	if !ok {
		return false
	}
	if d, ok := strings.CutPrefix(mac, macDigestPrefix); ok {
		want, err := hex.DecodeString(d)
		if err != nil {
			return false
		}
		sum := sha256.Sum256(signed)
		return hmac.Equal(k.macOf(sum[:]), want)
	}
	want, err := hex.DecodeString(mac)
	if err != nil {
		return false
	}
	return hmac.Equal(k.macOf(signed), want)
}

// hashAndMAC computes, in one pass of SHA-256 over line (without its
// newline), the line's chain hash (hex) and, for a digest MAC, whether
// the MAC is k's. digest is false for a line without a digest MAC (the
// caller checks it with checkMAC).
func (k Key) hashAndMAC(line []byte) (hash [64]byte, digest, ok bool) {
	var h lineHasher
	return h.hashAndMAC(k, line)
}

// lineHasher is one verifier's reusable SHA-256 and HMAC states, so that
// checking a line allocates nothing (a keyed 300k-event log's verify built
// an HMAC, two digests and their sums per line).
type lineHasher struct {
	h    hash2.Hash
	kid  string
	mac  hash2.Hash
	sd   [sha256.Size]byte
	sum  [sha256.Size]byte
	want [sha256.Size]byte
}

// hashAndMAC is Key.hashAndMAC with h's states.
func (h *lineHasher) hashAndMAC(k Key, line []byte) (hash [64]byte, digest, ok bool) {
	signed, mac, found := macSuffixBytes(line)
	if !found || !bytes.HasPrefix(mac, []byte(macDigestPrefix)) {
		sum := sha256.Sum256(line)
		hex.Encode(hash[:], sum[:])
		return hash, false, false
	}
	d := mac[len(macDigestPrefix):]
	if h.h == nil {
		h.h = sha256.New()
	}
	h.h.Reset()
	h.h.Write(signed)
	sd := h.h.Sum(h.sd[:0]) // Sum leaves the state as it was
	h.h.Write(line[len(signed):])
	hex.Encode(hash[:], h.h.Sum(h.sum[:0]))
	if h.mac == nil || h.kid != k.ID {
		h.mac, h.kid = hmac.New(sha256.New, k.Bytes), k.ID
	}
	h.mac.Reset()
	h.mac.Write(sd)
	got := h.mac.Sum(h.sum[:0])
	if hex.DecodedLen(len(d)) != len(h.want) {
		return hash, true, false
	}
	if _, err := hex.Decode(h.want[:], d); err != nil {
		return hash, true, false
	}
	return hash, true, hmac.Equal(got, h.want[:])
}

// macSuffixBytes is macSuffix without copying the MAC.
func macSuffixBytes(line []byte) (signed, mac []byte, ok bool) {
	// A digest MAC has a fixed length: look where its field starts first.
	// That is the last `,"mac":"` when the value holds no quote (a later
	// one would need a quote inside it), which saves a search backwards
	// through the line.
	const field, digestLen = `,"mac":"`, len(macDigestPrefix) + 2*sha256.Size
	if i := len(line) - 2 - digestLen - len(field); i >= 0 && string(line[i:i+len(field)]) == field &&
		string(line[len(line)-2:]) == `"}` && bytes.IndexByte(line[i+len(field):len(line)-2], '"') < 0 {
		return line[:i], line[i+len(field) : len(line)-2], true
	}
	i := bytes.LastIndex(line, []byte(`,"mac":"`))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, nil, false
	}
	return line[:i], line[i+len(`,"mac":"`) : len(line)-2], true
}

// OpenKeyed opens the log at path signed with the key in keyPath ("" for
// <path>.key, created on first use; the environment variable
// AGENTBOX_AUDIT_KEY names another file). Standard output ("-") is keyed
// only when a key file is named.
func OpenKeyed(path, keyPath string) (*Writer, error) {
	if keyPath == "" {
		keyPath = os.Getenv("AGENTBOX_AUDIT_KEY")
	}
	if keyPath == "" {
		if path == "-" {
			return Open(path)
		}
		keyPath = path + KeySuffix
	}
	if dir := filepath.Dir(keyPath); path != "-" && dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("audit key %s: %w", keyPath, err)
		}
	}
	k, err := LoadKey(keyPath, true)
	if err != nil {
		return nil, err
	}
	return OpenWith(path, Options{Key: &k})
}

// KeyPath is the key file OpenKeyed uses for the log at path.
func KeyPath(path, keyPath string) string {
	switch {
	case keyPath != "":
		return keyPath
	case os.Getenv("AGENTBOX_AUDIT_KEY") != "":
		return os.Getenv("AGENTBOX_AUDIT_KEY")
	case path == "-":
		return ""
	}
	return path + KeySuffix
}
