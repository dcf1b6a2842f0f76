package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"

	"github.com/agentbox/agentbox/internal/fakemodel"
)

func main() {
	tool := os.Args[1]
	key := os.Args[2]
	var in map[string]any
	json.Unmarshal([]byte(os.Args[3]), &in)
	s, err := fakemodel.Start([]fakemodel.Step{{Tool: tool, Input: map[string]any{key: in[key]}}, {Text: "done"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.URL)
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, os.Kill)
	<-c
	b, _ := json.MarshalIndent(s.Requests(), "", " ")
	os.WriteFile("/tmp/fake-reqs.json", b, 0o644)
	for _, r := range s.ToolResults() {
		fmt.Println("RESULT:", r)
	}
}
