package inbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// auth holds the users' API tokens (a 0600 file in the state directory),
// one-time login codes (printed in the login URL) and the page's
// sessions (cookies, in memory: a restarted inbox needs a new login).
type auth struct {
	file   string
	tokens map[string]string // user → token

	mu       sync.Mutex
	codes    map[string]codeEntry // one-time code → user
	sessions map[string]sessionEntry
	failures []time.Time
}

type codeEntry struct {
	user    string
	expires time.Time
}

type sessionEntry struct {
	user    string
	expires time.Time
}

const (
	codeLife    = 30 * time.Minute
	sessionLife = 12 * time.Hour
	cookieName  = "agentbox_inbox"
)

var userName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`) })

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // cannot happen on Linux
	}
	return hex.EncodeToString(b)
}

// newAuth loads (or creates) the tokens file: JSON {"user": "token"},
// mode 0600, owned by us, not a symlink. A user without a token gets one.
func newAuth(dir string, users []string, renew bool) (*auth, error) {
	for _, u := range users {
		if !userName().MatchString(u) {
			return nil, fmt.Errorf("inbox user %q: want letters, digits, . _ @ - (at most 64)", u)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("inbox state directory %s: %w", dir, err)
	}
	a := &auth{file: filepath.Join(dir, "tokens.json"), tokens: map[string]string{},
		codes: map[string]codeEntry{}, sessions: map[string]sessionEntry{}}
	f, err := os.OpenFile(a.file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("inbox tokens %s: %w (a symlink is refused)", a.file, err)
	default:
		st, err := f.Stat()
		if err == nil {
			sys := st.Sys().(*syscall.Stat_t)
			switch {
			case !st.Mode().IsRegular():
				err = errors.New("not a regular file")
			case int(sys.Uid) != os.Geteuid():
				err = fmt.Errorf("owned by uid %d, not by us", sys.Uid)
			case st.Mode().Perm()&0o077 != 0:
				err = fmt.Errorf("mode %v: readable by others (want 0600)", st.Mode().Perm())
			}
		}
		if err == nil {
			err = json.NewDecoder(f).Decode(&a.tokens)
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("inbox tokens %s: %w", a.file, err)
		}
	}
	dirty := false
	for _, u := range users {
		if t := a.tokens[u]; renew || len(t) != 64 {
			a.tokens[u] = randomHex(32)
			dirty = true
		}
	}
	for u := range a.tokens {
		if !contains(users, u) {
			delete(a.tokens, u) // a user no longer named may not log in
			dirty = true
		}
	}
	if dirty {
		b, _ := json.MarshalIndent(a.tokens, "", "  ")
		tmp := a.file + ".tmp" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("inbox tokens %s: %w", a.file, err)
		}
		if err := os.Rename(tmp, a.file); err != nil {
			os.Remove(tmp)
			return nil, fmt.Errorf("inbox tokens %s: %w", a.file, err)
		}
	}
	return a, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// oneTime mints a login code for user: valid once, for codeLife.
func (a *auth) oneTime(user string) (string, error) {
	if _, ok := a.tokens[user]; !ok {
		return "", fmt.Errorf("unknown inbox user %q", user)
	}
	code := randomHex(24)
	a.mu.Lock()
	a.codes[code] = codeEntry{user: user, expires: time.Now().Add(codeLife)}
	a.mu.Unlock()
	return code, nil
}

// login exchanges a one-time code or a user's API token for a session.
// Too many failures in a minute refuse every login for that minute.
func (a *auth) login(code, token string) (session, user string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	recent := a.failures[:0]
	for _, t := range a.failures {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	a.failures = recent
	if len(a.failures) >= 20 {
		return "", "", errTooMany
	}
	switch {
	case code != "":
		if c, ok := a.codes[code]; ok {
			delete(a.codes, code)
			if now.Before(c.expires) {
				user = c.user
			}
		}
	case token != "":
		user = a.userOfToken(token)
	}
	if user == "" {
		a.failures = append(a.failures, now)
		return "", "", errBadLogin
	}
	session = randomHex(32)
	a.sessions[session] = sessionEntry{user: user, expires: now.Add(sessionLife)}
	return session, user, nil
}

var (
	errBadLogin = errors.New("the login code or token is wrong, used or expired")
	errTooMany  = errors.New("too many failed logins; wait a minute")
)

func (a *auth) userOfToken(token string) string {
	for u, t := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return u
		}
	}
	return ""
}

func (a *auth) session(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok || time.Now().After(s.expires) {
		delete(a.sessions, id)
		return ""
	}
	return s.user
}

func (a *auth) logout(id string) {
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
}

// listenWeb opens the page's port. An address beyond loopback needs TLS:
// the certificate given, or one the inbox creates (and whose fingerprint
// it prints).
func (s *Server) listenWeb() error {
	host, _, err := net.SplitHostPort(s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", s.cfg.Listen, err)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	useTLS := s.cfg.TLSCert != "" || s.cfg.SelfSigned
	if !loopback && !useTLS {
		return fmt.Errorf("--listen %s is beyond loopback: it needs TLS (--tls-cert FILE --tls-key FILE, or --tls-self-signed)", s.cfg.Listen)
	}
	if (s.cfg.TLSCert == "") != (s.cfg.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	shown := host
	if host == "" || (net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()) {
		shown = "127.0.0.1"
		if !loopback {
			if h, err := os.Hostname(); err == nil {
				shown = h
			}
		}
	}
	hostPort := net.JoinHostPort(shown, strconv.Itoa(addr.Port))
	if useTLS {
		var cert tls.Certificate
		if s.cfg.TLSCert != "" {
			cert, err = tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
			if err != nil {
				ln.Close()
				return fmt.Errorf("--tls-cert %s: %w", s.cfg.TLSCert, err)
			}
		} else if cert, err = selfSigned(append([]string{shown, host}, s.cfg.Hosts...)); err != nil {
			ln.Close()
			return err
		}
		sum := sha256.Sum256(cert.Certificate[0])
		s.Fingerprint = strings.ToUpper(hex.EncodeToString(sum[:]))
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		s.tls = true
		s.base = "https://" + hostPort
	} else {
		s.base = "http://" + hostPort
	}
	s.webLn = ln
	s.hosts = map[string]bool{hostPort: true, net.JoinHostPort(host, strconv.Itoa(addr.Port)): true}
	if loopback {
		for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
			s.hosts[net.JoinHostPort(h, strconv.Itoa(addr.Port))] = true
		}
	}
	for _, h := range s.cfg.Hosts {
		s.hosts[net.JoinHostPort(h, strconv.Itoa(addr.Port))] = true
	}
	return nil
}

// selfSigned makes a certificate for names (host names and addresses),
// valid for a year; its key lives only in memory.
func selfSigned(names []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	sn, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: "agentbox inbox"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	sort.Strings(tmpl.DNSNames)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}
