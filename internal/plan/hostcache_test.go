package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// TestHostLayers: which of the caller's build and package caches a run
// layers, from the variables each tool reads and the default places
// under HOME; a missing default is no news, a missing named one a note,
// one reached through a symlink a note, one inside the workspace or a
// writable grant an error.
func TestHostLayers(t *testing.T) {
	d := t.TempDir()
	home := filepath.Join(d, "home")
	ws := filepath.Join(d, "ws")
	mk := func(p ...string) string {
		dir := filepath.Join(p...)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	gob, npm, pip := mk(home, ".cache", "go-build"), mk(home, ".npm", "_cacache"), mk(home, ".cache", "pip")
	reg, git, m2 := mk(home, ".cargo", "registry"), mk(home, ".cargo", "git"), mk(home, ".m2", "repository")
	modc := mk(home, "go", "pkg", "mod")
	elsewhere := mk(d, "gocache")
	inWS := mk(ws, "target", "gocache")
	granted := mk(d, "rw", "gocache")
	link := filepath.Join(d, "linked")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	// A writable grant given through a symlink covers its target.
	behind := mk(d, "rw2", "gocache")
	grantLink := filepath.Join(d, "rw2link")
	if err := os.Symlink(filepath.Dir(behind), grantLink); err != nil {
		t.Fatal(err)
	}
	type got struct{ tool, dir string }
	cases := []struct {
		name    string
		env     []string
		want    []got
		note    string
		wantErr string
	}{
		{"defaults under HOME", []string{"HOME=" + home},
			[]got{{"go-build", gob}, {"go-mod", modc}, {"npm", npm}, {"pip", pip}, {"cargo-registry", reg}, {"cargo-git", git}, {"maven", m2}}, "", ""},
		{"GOCACHE named", []string{"HOME=" + d, "GOCACHE=" + elsewhere}, []got{{"go-build", elsewhere}}, "", ""},
		{"GOPATH", []string{"HOME=" + d, "GOPATH=" + filepath.Join(home, "go") + ":/elsewhere"}, []got{{"go-mod", modc}}, "", ""},
		{"GOCACHE off", []string{"HOME=" + d, "GOCACHE=off"}, nil, "", ""},
		{"a named cache missing", []string{"HOME=" + d, "PIP_CACHE_DIR=" + filepath.Join(d, "nope")}, nil, "host pip cache " + filepath.Join(d, "nope") + " not found", ""},
		{"a default cache missing", []string{"HOME=" + filepath.Join(d, "nohome")}, nil, "", ""},
		{"through a symlink", []string{"HOME=" + d, "GOCACHE=" + link}, nil, "is reached through a symlink (to " + elsewhere + ")", ""},
		{"npm_config_cache", []string{"HOME=" + d, "npm_config_cache=" + filepath.Dir(npm)}, []got{{"npm", npm}}, "", ""},
		{"CARGO_HOME", []string{"HOME=" + d, "CARGO_HOME=" + filepath.Join(home, ".cargo")}, []got{{"cargo-registry", reg}, {"cargo-git", git}}, "", ""},
		{"inside the workspace", []string{"HOME=" + d, "GOCACHE=" + inWS}, nil, "", "host go-build cache " + inWS + " is inside the workspace"},
		{"under a writable grant", []string{"HOME=" + d, "GOCACHE=" + granted}, nil, "", "is inside the writable grant " + filepath.Dir(granted)},
		{"under a writable grant's symlink", []string{"HOME=" + d, "GOCACHE=" + behind}, nil, "", "is inside the writable grant " + filepath.Dir(behind)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			writable := resolvedDirs([]string{ws, filepath.Dir(granted), grantLink})
			layers, notes, err := hostLayers(c.env, writable)
			// Probed ahead (Build, while the policy loads): the same
			// layers, notes and error, the module cache's too.
			ahead := learnHostAhead(c.env, Input{})
			al, an, aerr := hostLayersWith(c.env, writable, ahead.probe)
			if !reflect.DeepEqual(al, layers) || !reflect.DeepEqual(an, notes) || fmt.Sprint(aerr) != fmt.Sprint(err) {
				t.Errorf("probed ahead: %v %q %v; probed now: %v %q %v", al, an, aerr, layers, notes, err)
			}
			ac, acn, acerr := hostCachesWith(c.env, writable, ahead.probe)
			nc, ncn, ncerr := hostCaches(c.env, writable)
			if !reflect.DeepEqual(ac, nc) || !reflect.DeepEqual(acn, ncn) || fmt.Sprint(acerr) != fmt.Sprint(ncerr) {
				t.Errorf("module cache probed ahead: %v %q %v; probed now: %v %q %v", ac, acn, acerr, nc, ncn, ncerr)
			}
			if dl, _ := goModDownloadDir(func(k string) string { return sandbox.EnvValue(c.env, k) }); dl != "" {
				if _, ok := ahead.probes[dl]; !ok {
					t.Errorf("the module cache %s was not probed ahead", dl)
				}
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g []got
			for _, l := range layers {
				if l.Layer == nil || l.Layer.Lower != l.Dir || l.Layer.Name != l.Tool {
					t.Errorf("%s: layer %+v does not match", l.Tool, l.Layer)
				}
				g = append(g, got{l.Tool, l.Dir})
			}
			if len(g) != len(c.want) || len(g) > 0 && !equalGot(g, c.want) {
				t.Errorf("layers %v, want %v", g, c.want)
			}
			if joined := strings.Join(notes, "\n"); c.note == "" && joined != "" || !strings.Contains(joined, c.note) {
				t.Errorf("notes %q, want %q", joined, c.note)
			}
		})
	}
}

func equalGot[T comparable](a, b []T) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestProfileCommandAhead: the command resolved while the policy loads
// (learnHostAhead) selects the agent profile the command resolved then
// would: by PATH, by path, through a symlink, a missing one, and none
// asked when profiles are off.
func TestProfileCommandAhead(t *testing.T) {
	ws := testWorkspace(t)
	p, err := Build(testInput(ws))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	claude := filepath.Join(bin, "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(claude, filepath.Join(bin, "cl"))
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	for _, c := range []struct {
		argv0, profile, want string
	}{
		{"claude", "", "claude-code"}, {claude, "", "claude-code"}, {filepath.Join(bin, "cl"), "", "claude-code"},
		{"true", "", ""}, {"nope", "", ""}, {"claude", AgentProfileNone, ""},
	} {
		in := testInput(ws)
		in.Argv, in.AgentProfile, in.Env = []string{c.argv0}, c.profile, env
		ahead := learnHostAhead(env, in)
		if ahead.commandDone != (c.profile != AgentProfileNone) {
			t.Errorf("%s: command resolved ahead: %v", c.argv0, ahead.commandDone)
		}
		got, gerr := selectProfile(p.Engine, in, env, ahead)
		now, nerr := selectProfile(p.Engine, in, env, nil)
		name := func(pr *Profile) string {
			if pr == nil {
				return ""
			}
			return pr.Profile.Name + " " + pr.How + " " + pr.resolved
		}
		if name(got) != name(now) || fmt.Sprint(gerr) != fmt.Sprint(nerr) {
			t.Errorf("%s: ahead %q %v; now %q %v", c.argv0, name(got), gerr, name(now), nerr)
		}
		if got := strings.Fields(name(got) + " "); (len(got) > 0 && got[0] != c.want) || (len(got) == 0) != (c.want == "") {
			t.Errorf("%s: profile %v, want %q", c.argv0, got, c.want)
		}
	}
}
