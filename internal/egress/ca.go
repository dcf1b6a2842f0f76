package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/fault"
)

// Authority is a run's own certificate authority: created at launch, held
// in agentbox's memory only (its key is never written anywhere), trusted
// inside the sandbox so the proxy can terminate TLS for the hosts it
// inspects. Its certificate carries DNS name constraints: it can vouch for
// the inspected names only (IP addresses are not constrained: see
// NewAuthority).
type Authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// authorityLife bounds the certificates a run's authority issues: longer
// than any run, short enough that a copy is worth little.
const authorityLife = 30 * 24 * time.Hour

// NewAuthority creates a run's authority constrained to names: DNS names
// and patterns (*.example.com: the domain and its subdomains) and IP
// addresses, as the network block writes them (a :port is ignored).
func NewAuthority(runID string, names []string) (*Authority, error) {
	if err := fault.Err("egress.ca"); err != nil {
		return nil, fmt.Errorf("creating the run's certificate authority: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("creating the run's certificate authority: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("creating the run's certificate authority: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "agentbox run " + runID, Organization: []string{"agentbox"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(authorityLife),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	// DNS name constraints only: Bun's TLS (Claude Code's) refuses any
	// certificate under a CA with IP address constraints
	// (UNSUPPORTED_CONSTRAINT_TYPE), so an address is not constrained.
	// An inspect pattern of "*" (every host) leaves it unconstrained.
	constrained := true
	for _, n := range names {
		h := hostOfPattern(n)
		if h == "" {
			constrained = false
		}
		if h != "" && net.ParseIP(h) == nil && !slices.Contains(tmpl.PermittedDNSDomains, h) {
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
		}
	}
	tmpl.PermittedDNSDomainsCritical = constrained
	switch {
	case !constrained:
		tmpl.PermittedDNSDomains = nil
	case len(tmpl.PermittedDNSDomains) == 0:
		// No name at all: "invalid" is a reserved name no host has.
		tmpl.PermittedDNSDomains = []string{"invalid"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating the run's certificate authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("creating the run's certificate authority: %w", err)
	}
	return &Authority{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// hostOfPattern is a host pattern's name for a name constraint: the host
// without port, brackets or a leading "*."; "" for "*".
func hostOfPattern(p string) string {
	h := strings.ToLower(strings.TrimSpace(p))
	if strings.HasPrefix(h, "[") {
		if i := strings.Index(h, "]"); i > 0 {
			return h[1:i]
		}
	}
	if strings.Count(h, ":") == 1 {
		h, _, _ = strings.Cut(h, ":")
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "*."), ".")
	if h == "*" {
		return ""
	}
	return h
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// CertPEM is the authority's certificate (PEM), what the sandbox trusts.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// Cert is the authority's certificate.
func (a *Authority) Cert() *x509.Certificate { return a.cert }

// Leaf returns a server certificate for host (a DNS name or an IP
// address), issued once per host and kept for the run.
func (a *Authority) Leaf(host string) (*tls.Certificate, error) {
	host = strings.ToLower(strings.Trim(host, "[]"))
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.leaves[host]; c != nil {
		return c, nil
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(authorityLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	// The name is in the subject alternative names only: verifiers
	// check a common name that looks like a host against the DNS name
	// constraints, which an address does not satisfy.
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
		tmpl.Subject = pkix.Name{Organization: []string{"agentbox"}}
	} else {
		tmpl.DNSNames = []string{host}
		tmpl.Subject = pkix.Name{CommonName: host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("issuing a certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey}
	a.leaves[host] = c
	return c, nil
}
