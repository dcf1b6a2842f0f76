package command

import "testing"

func BenchmarkFromArgv(b *testing.B) {
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"git_status", []string{"git", "status"}},
		{"go_build", []string{"go", "build", "./..."}},
		{"usr_bin_ls", []string{"/usr/bin/ls", "-la", "src"}},
		{"git_C_c_push", []string{"/usr/bin/git", "-C", "target", "-c", "core.pager=less", "push", "origin", "main"}},
		{"timeout_env_make", []string{"timeout", "60", "env", "CC=gcc", "make", "-j2"}},
		{"bash_c", []string{"bash", "-c", "go test ./... && git status"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = FromArgv(bc.argv, "/w/target")
			}
		})
	}
}

func BenchmarkParseShell(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"simple", "git status"},
		{"pipeline", "cat a | sort | uniq -c > out.txt && git diff --stat"},
		{"nested", `bash -c 'for f in *.go; do gofmt -l "$f"; done' | xargs -r git add`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = ParseShell(bc.line)
			}
		})
	}
}
