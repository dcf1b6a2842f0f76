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
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/fault"
)

// Authority is a run's own certificate authority: created at launch, held
// in agentbox's memory only (its key is never written anywhere), trusted
// inside the sandbox so the proxy can terminate TLS for the hosts it
// inspects. Its certificate carries name constraints: it can vouch for
// those hosts only, so even a copy of it taken out of the sandbox vouches
// for nothing else.
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
	for _, n := range names {
		h := hostOfPattern(n)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			bits := 8 * len(ip.To16())
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
	}
	tmpl.PermittedDNSDomainsCritical = true
	if len(tmpl.PermittedDNSDomains) == 0 {
		// No name at all: "invalid." is a reserved name no host has.
		tmpl.PermittedDNSDomains = []string{"invalid"}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.PermittedIPRanges = []*net.IPNet{{IP: net.IPv4(0, 0, 0, 0).To4(), Mask: net.CIDRMask(32, 32)}}
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
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(authorityLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("issuing a certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey}
	a.leaves[host] = c
	return c, nil
}
