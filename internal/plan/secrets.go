package plan

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/sandbox"
	"github.com/agentbox/agentbox/policy"
)

// Secret is one credential the run brokers: the sandbox's variable Name
// holds Placeholder; the egress proxy puts the caller's value in its
// place in the Headers of requests to Hosts only (secretHeadersFor), and
// the value an answer carries back is replaced by the placeholder. The
// value is kept unexported, so no launch event, summary or JSON of the
// plan can carry it.
type Secret struct {
	Name        string
	Placeholder string
	Hosts       []string
	// Headers are the request headers the value is put in.
	Headers []string
	Source  string
	// Program, when set, is the `programs:` block that alone holds the
	// secret: its placeholder from any other process is refused.
	Program string
	value   string
}

// profileSecretHeaders are the headers the built-in agent profiles'
// credentials go in (the APIs' own: Anthropic's x-api-key, or a bearer
// token; OpenAI's and Codex's bearer token; Azure OpenAI's api-key; the
// Gemini API's x-goog-api-key).
var profileSecretHeaders = map[string][]string{
	"ANTHROPIC_API_KEY":    {"X-Api-Key"},
	"ANTHROPIC_AUTH_TOKEN": {"Authorization"},
	"OPENAI_API_KEY":       {"Authorization"},
	"CODEX_API_KEY":        {"Authorization"},
	"AZURE_OPENAI_API_KEY": {"Api-Key", "Authorization"},
	"GEMINI_API_KEY":       {"X-Goog-Api-Key"},
	"GOOGLE_API_KEY":       {"X-Goog-Api-Key"},
}

// defaultSecretHeaders are where a secret no table above names (a
// network block's secret, --secret, a policy file's own profile) is put:
// the credential headers HTTP APIs and git use. Never the query, the
// path, the body or any other header.
var defaultSecretHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Auth-Token", "Private-Token"}

// declareHeaders sets the headers the caller declared for brokered
// secrets (each name must be one the run brokers; a header name an HTTP
// token, not one that frames the request).
func (p *Plan) declareHeaders(decl map[string][]string) error {
	names := make([]string, 0, len(decl))
	for name := range decl {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		i := slices.IndexFunc(p.Secrets, func(s Secret) bool { return s.Name == name })
		if i < 0 {
			return &OptionError{Option: "secret-header", Value: name, Err: errors.New("no brokered secret of that name (give --secret " + name + "@HOST, or a profile or role that brokers it)")}
		}
		var hs []string
		for _, h := range decl[name] {
			if err := checkSecretHeader(h); err != nil {
				return &OptionError{Option: "secret-header", Value: name + ":" + h, Err: err}
			}
			if !slices.ContainsFunc(hs, func(x string) bool { return strings.EqualFold(x, h) }) {
				hs = append(hs, h)
			}
		}
		if len(hs) == 0 {
			return &OptionError{Option: "secret-header", Value: name, Err: errors.New("no header given")}
		}
		p.Secrets[i].Headers = hs
	}
	return nil
}

// checkSecretHeader refuses a header name that is no HTTP token or that
// frames the request (its value would not reach the API as a credential).
func checkSecretHeader(h string) error {
	if h == "" {
		return errors.New("empty header name")
	}
	for _, c := range h {
		if c > 0x7e || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return fmt.Errorf("%q is not a header name", h)
		}
	}
	switch strings.ToLower(h) {
	case "host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "keep-alive":
		return fmt.Errorf("%s frames the request; a credential cannot go there", h)
	}
	return nil
}

// secretHeadersFor is the header set of the secret held in name.
func secretHeadersFor(name string) []string {
	if h, ok := profileSecretHeaders[name]; ok {
		return slices.Clone(h)
	}
	return slices.Clone(defaultSecretHeaders)
}

// Value is the caller's real value (for the egress proxy only).
func (s Secret) Value() string { return s.value }

// Inspection is how the run's egress proxy reads HTTPS: the hosts whose TLS
// it terminates and the run's authority the sandbox trusts.
type Inspection struct {
	// Hosts are host patterns: the network block's inspect, every
	// secret's hosts, the hosts its requests rules name.
	Hosts     []string
	Authority *egress.Authority
	// Bundle is the PEM the sandbox trusts (the caller's roots and the
	// run's authority), written at launch to BundlePath in the agent's
	// HOME and named by the variables in CAEnv.
	Bundle     []byte
	BundlePath string
	// Roots names the file the caller's roots were read from ("" none:
	// only inspected hosts verify inside).
	Roots string
}

// caEnv are the variables TLS clients read their trusted roots from:
// OpenSSL and Go (SSL_CERT_FILE), Node (NODE_EXTRA_CA_CERTS; Claude Code
// and Gemini CLI), Python requests and pip, curl, git, Codex, cargo.
var caEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE", "CARGO_HTTP_CAINFO"}

// caBundleName is the bundle's file in the agent's HOME.
const caBundleName = "agentbox-ca.pem"

// systemRootFiles are where distributions keep their CA bundle (the list
// Go's crypto/x509 searches on Linux).
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// planSecrets works out the run's brokered secrets and inspected hosts:
// the role's network secrets, --secret grants and the agent profile's
// API credentials (those set in the caller's environment, for the
// profile's API hosts, when the run's network goes through the proxy).
// It creates the run's authority when any host is inspected.
func (p *Plan) planSecrets(in Input) error {
	nw := p.Network
	var grants []policy.SecretGrant
	grants = append(grants, nw.Secrets...)
	for _, g := range in.Secrets {
		if g.Source == "" {
			g.Source = "--secret"
		}
		if err := policy.CheckSecretGrant(g); err != nil {
			return &OptionError{Option: "secret", Value: g.Name, Err: err}
		}
		grants = append(grants, g)
	}
	explicit := len(grants)
	if prof := p.Profile; prof != nil && nw.Proxy && len(prof.Hosts) > 0 {
		for _, name := range prof.Profile.Secrets {
			if sandbox.EnvValue(p.CallerEnv, name) != "" {
				grants = append(grants, policy.SecretGrant{Name: name, Hosts: prof.Hosts, Source: "agent-profile:" + prof.Profile.Name})
			}
		}
	}
	progs := p.ProgramGrants()
	if len(progs) > 0 && !nw.Proxy {
		return fmt.Errorf("agentbox: %s: programs: rights that follow a program need network mode proxy (the run's network is %s)", progs[0].Source, networkWord(nw))
	}
	owner := map[string]policy.ProgramGrant{} // secret → the program block holding it
	for _, g := range progs {
		for _, name := range g.Secrets {
			if o, dup := owner[name]; dup {
				return fmt.Errorf("agentbox: %s: programs.%s.secrets: %s is program %s's already (%s); a secret follows one program", g.Source, g.Name, name, o.Name, o.Source)
			}
			if i := slices.IndexFunc(grants, func(sg policy.SecretGrant) bool { return sg.Name == name }); i >= 0 {
				return fmt.Errorf("agentbox: %s: programs.%s.secrets: %s is brokered for the whole run too (%s); a program's secret is its own", g.Source, g.Name, name, grants[i].Source)
			}
			if sandbox.EnvValue(p.CallerEnv, name) == "" {
				return fmt.Errorf("agentbox: %s: programs.%s.secrets: %s is not set in the caller's environment: no such secret to broker (set it, or drop it from the block)", g.Source, g.Name, name)
			}
			owner[name] = g
			grants = append(grants, policy.SecretGrant{Name: name, Hosts: g.Hosts, Source: g.Source})
		}
	}
	if nw.Proxy && len(in.PushHosts) > 0 {
		if _, err := policy.HostMatcher(in.PushHosts); err != nil {
			return &OptionError{Option: "push-tokens", Err: err}
		}
		p.PushHosts = slices.Clone(in.PushHosts)
	}
	if len(grants) == 0 && len(nw.Inspect) == 0 && len(nw.Requests) == 0 && len(p.PushHosts) == 0 {
		return p.declareHeaders(in.SecretHeaders) // none brokered: any declaration is refused
	}
	if !nw.Proxy {
		opt := "secret"
		if explicit == 0 {
			opt = "network"
		}
		return &OptionError{Option: opt, Err: errors.New("brokered secrets and inspected hosts need network mode proxy (the run's network is " + networkWord(nw) + ")")}
	}
	byName := map[string]int{}
	for _, g := range grants {
		if i, ok := byName[g.Name]; ok {
			for _, h := range g.Hosts {
				if !slices.Contains(p.Secrets[i].Hosts, h) {
					p.Secrets[i].Hosts = append(p.Secrets[i].Hosts, h)
				}
			}
			continue
		}
		v := sandbox.EnvValue(p.CallerEnv, g.Name)
		if v == "" {
			return &OptionError{Option: "secret", Value: g.Name, Err: fmt.Errorf("%s is not set in the caller's environment: nothing to broker (set it, or drop the grant from %s)", g.Name, g.Source)}
		}
		var rnd [16]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return fmt.Errorf("agentbox: a placeholder for %s: %w", g.Name, err)
		}
		byName[g.Name] = len(p.Secrets)
		p.Secrets = append(p.Secrets, Secret{Name: g.Name, Placeholder: "agentbox-placeholder-" + hex.EncodeToString(rnd[:]),
			Hosts: slices.Clone(g.Hosts), Headers: secretHeadersFor(g.Name), Source: g.Source, Program: owner[g.Name].Name, value: v})
	}
	if err := p.declareHeaders(in.SecretHeaders); err != nil {
		return err
	}
	for _, s := range p.Secrets {
		if _, err := policy.HostMatcher(s.Hosts); err != nil {
			return &OptionError{Option: "secret", Value: s.Name, Err: err}
		}
		p.ExtraEnv = append(p.ExtraEnv, s.Name+"="+s.Placeholder)
		if !slices.Contains(p.Role.Env, s.Name) {
			p.Role.Env = append(p.Role.Env, s.Name)
		}
	}
	ins := &Inspection{}
	add := func(h string) {
		if !slices.Contains(ins.Hosts, h) {
			ins.Hosts = append(ins.Hosts, h)
		}
	}
	for _, h := range nw.Inspect {
		add(h)
	}
	for _, s := range p.Secrets {
		for _, h := range s.Hosts {
			add(h)
		}
	}
	for _, r := range nw.Requests {
		add(r.Host)
	}
	for _, h := range p.PushHosts {
		add(h)
	}
	var err error
	if ins.Authority, err = egress.NewAuthority(p.ID, ins.Hosts); err != nil {
		return fmt.Errorf("agentbox: %w; brokered secrets and inspected hosts need it (drop --secret and the network block's secrets, inspect and requests)", err)
	}
	roots := sandbox.EnvValue(p.CallerEnv, "SSL_CERT_FILE")
	if roots == "" {
		for _, f := range systemRootFiles {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				roots = f
				break
			}
		}
	}
	var bundle []byte
	if roots != "" {
		b, err := os.ReadFile(roots)
		if err != nil {
			return fmt.Errorf("agentbox: the CA bundle the sandbox is to trust: %w", err)
		}
		bundle = append(b, '\n')
		ins.Roots = roots
	}
	ins.Bundle = append(bundle, ins.Authority.CertPEM()...)
	ins.BundlePath = filepath.Join(p.Boundary.Home, caBundleName)
	for _, name := range caEnv {
		p.ExtraEnv = append(p.ExtraEnv, name+"="+ins.BundlePath)
		if !slices.Contains(p.Role.Env, name) {
			p.Role.Env = append(p.Role.Env, name)
		}
	}
	p.Inspection = ins
	return nil
}

func networkWord(nw policy.Network) string {
	switch {
	case nw.Proxy:
		return "proxy"
	case len(nw.TCPConnect)+len(nw.TCPBind) > 0:
		return "tcp"
	}
	return "none"
}

// Inspects reports whether the run's proxy terminates TLS for host:port.
func (p *Plan) Inspects() func(host string, port int) bool {
	if p.Inspection == nil {
		return nil
	}
	m, _ := policy.HostMatcher(p.Inspection.Hosts) // checked by planSecrets
	return m
}

// EgressSecrets are the brokered secrets as the egress proxy takes them.
func (p *Plan) EgressSecrets() []egress.Secret {
	var out []egress.Secret
	for _, s := range p.Secrets {
		m, _ := policy.HostMatcher(s.Hosts)
		es := egress.Secret{Name: s.Name, Placeholder: s.Placeholder, Value: s.value, Hosts: m, Headers: slices.Clone(s.Headers)}
		if s.Program != "" {
			es.Programs = []string{s.Program}
		}
		out = append(out, es)
	}
	return out
}

// ProgramGrants are the run's rights that follow a program: the role's
// `programs:` and the agent profile's `program_rights:` (a role's block
// of the same name wins).
func (p *Plan) ProgramGrants() []policy.ProgramGrant {
	out := slices.Clone(p.Role.Programs)
	if p.Profile != nil && p.Profile.Profile != nil {
		for _, g := range p.Profile.Profile.ProgramRights {
			if !slices.ContainsFunc(out, func(r policy.ProgramGrant) bool { return r.Name == g.Name }) {
				out = append(out, g)
			}
		}
	}
	return out
}

// EgressPrograms are ProgramGrants as the egress proxy takes them.
func (p *Plan) EgressPrograms() []egress.Program {
	var out []egress.Program
	for _, g := range p.ProgramGrants() {
		m := g.Matcher()
		if m == nil {
			continue // refused by the policy loader
		}
		ep := egress.Program{Name: g.Name, Source: g.Source, Only: g.Only, Match: m}
		if len(g.Hosts) > 0 {
			ep.Hosts, _ = policy.HostMatcher(g.Hosts) // checked by the policy loader
		}
		out = append(out, ep)
	}
	return out
}

// brokered reports whether the variable kv (NAME=value) is a brokered
// secret's: its caller value stays out of the sandbox's environment.
func (p *Plan) brokered(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	for _, s := range p.Secrets {
		if s.Name == name {
			return true
		}
	}
	return false
}
