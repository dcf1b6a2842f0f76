package command_test

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
)

func ExampleFromArgv() {
	for _, it := range command.FromArgv([]string{"timeout", "10", "/usr/bin/git", "-C", "target", "-c", "core.pager=less", "log"}, "/w") {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s floor=%d %s", it.Action, it.Floor, it.FloorReason)))
	}
	// Output:
	// tool:exec:timeout 10 floor=0
	// tool:git:log floor=2 git config core.pager sets a program or code source git uses
}

func ExampleParseShell() {
	items, err := command.ParseShell(`cd target && sed -i 's/a/b/' x.go; bash -c "git push" > out.log`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range items {
		fmt.Printf("%d:%d %s\n", it.Pos.Line, it.Pos.Col, it.Action)
	}
	// Output:
	// 1:14 tool:exec:sed -i s/a/b/ x.go
	// 1:14 tool:create_file:target/x.go
	// 1:36 tool:exec:bash -c 'git push'
	// 1:36 tool:git:push
	// 1:55 tool:create_file:target/out.log
}

func ExampleParseGit() {
	g, err := command.ParseGit([]string{"git", "--no-pager", "-c", "alias.p=push", "p", "origin"})
	fmt.Println(g.Sub, g.Args, g.ConfigKeys, len(g.RunsPrograms) > 0, err)
	// Output:
	// p [origin] [alias.p] true <nil>
}
