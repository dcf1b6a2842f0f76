package load

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/boundary"
	"github.com/agentbox/agentbox/policy"
	"go.yaml.in/yaml/v3"
)

// initTemplate is the project file `agentbox init` writes, which a
// launch reads every time: written by internal/boundary's Init into a
// temporary workspace, so the shortcut is tested on what init writes now.
func initTemplate(t testing.TB) string {
	t.Helper()
	dir := t.TempDir() + "/ws"
	if _, err := boundary.Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dir + "/agentbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutComments is n with every comment dropped (what versionDoc
// leaves out: no reader and no part of the policy reads them).
func withoutComments(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Content = nil
	for _, k := range n.Content {
		c.Content = append(c.Content, withoutComments(k))
	}
	return &c
}

// sameAsYAML checks that a file versionOnly accepts decodes with YAML to
// the node versionDoc builds (comments aside), and parses to the same
// document and problems with and without the shortcut.
func sameAsYAML(t *testing.T, data []byte) {
	t.Helper()
	line, ok := versionOnly(data)
	if !ok {
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%q: taken as comments and version, but YAML refuses it: %v", data, err)
	}
	var want *yaml.Node
	if line > 0 {
		d := versionDoc(line)
		want = &d
	}
	if got := withoutComments(&doc); line == 0 && len(doc.Content) != 0 || line > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: YAML decodes %+v, the shortcut %+v", data, got, want)
	}
	for _, layer := range []policy.Layer{policy.LayerProject, policy.LayerUser, policy.LayerFile} {
		fast, fastErrs := parseFile("agentbox.yaml", data, layer)
		p := &parser{file: "agentbox.yaml", base: "agentbox.yaml", layer: layer}
		slowDoc := &policy.Document{Path: p.file, Layer: layer}
		slow, slowErrs := parseDoc(p, slowDoc, &doc)
		if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(fastErrs, slowErrs) {
			t.Fatalf("%q at %s: shortcut %+v %v, YAML %+v %v", data, layer, fast, fastErrs, slow, slowErrs)
		}
	}
}

// TestVersionOnly: the project file `agentbox init` writes (comments and
// `version: 1`) is read without the YAML decoder, to what the decoder
// makes of it; anything else — a second key, a version after other text,
// a tab, a byte outside printable ASCII, a directive, a document marker —
// goes to the decoder.
func TestVersionOnly(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		ok   bool
	}{
		{initTemplate(t), 6, true},
		{"version: 1", 1, true},
		{"version: 1\n", 1, true},
		{"", 0, true},
		{"# only a comment\n\n   # indented\n", 0, true},
		{"\n\nversion: 1\n# after\n", 3, true},
		{"version: 1\nversion: 1\n", 0, false}, // a duplicate key: the decoder's error
		{"version: 2\n", 0, false},
		{"version: 1 # why\n", 0, false},
		{"version: 1 \n", 0, false},
		{" version: 1\n", 0, false},
		{"version:  1\n", 0, false},
		{"version: 1\r\n", 0, false},
		{"version: 1\n\t# tab\n", 0, false},
		{"# café\nversion: 1\n", 0, false},
		{"%YAML 1.2\n---\nversion: 1\n", 0, false},
		{"---\nversion: 1\n", 0, false},
		{"version: 1\nrules: []\n", 0, false},
		{"version: 1\n...\n", 0, false},
	} {
		line, ok := versionOnly([]byte(c.text))
		if line != c.line || ok != c.ok {
			t.Errorf("versionOnly(%q) = %d, %v; want %d, %v", c.text, line, ok, c.line, c.ok)
		}
		sameAsYAML(t, []byte(c.text))
	}
	d, errs := parseFile("agentbox.yaml", []byte(initTemplate(t)), policy.LayerProject)
	if len(errs) > 0 || d == nil || d.Format != "agentbox" || d.Rules != nil {
		t.Errorf("the init template: %+v %v", d, errs)
	}
}

// FuzzVersionOnly: whatever versionOnly takes as comments and version,
// the YAML decoder decodes to the same node, and the policy read is the
// same with and without the shortcut.
func FuzzVersionOnly(f *testing.F) {
	for _, s := range []string{initTemplate(f), "version: 1", "", "#\n", "  #x\nversion: 1\n\n", "version: 1\n#: x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.Count(string(data), "\n") > 200 {
			return
		}
		sameAsYAML(t, data)
	})
}
