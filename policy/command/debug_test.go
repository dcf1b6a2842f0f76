package command

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDebugPrint(t *testing.T) {
	line := os.Getenv("H2LINE")
	if line == "" {
		t.Skip("set H2LINE")
	}
	var items []Item
	var err error
	if strings.HasPrefix(line, "ARGV:") {
		items = FromArgv(strings.Split(line[5:], "|"), os.Getenv("H2CWD"))
	} else {
		items, err = ParseShell(line)
	}
	fmt.Println("err:", err)
	for _, it := range items {
		fmt.Printf("%-50q floor=%d %q wrap=%v pos=%v cats=%v text=%q argv=%q\n", it.Action, it.Floor, it.FloorReason, it.Wrapper, it.Pos, it.Categories, it.Text, it.Argv)
	}
}
