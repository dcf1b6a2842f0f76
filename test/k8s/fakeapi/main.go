// Command agentbox-fakeapi is the fake model API of the Kubernetes tests
// (test/k8s), run as a pod of its own: it serves internal/fakemodel's
// scripted Anthropic Messages API on :8080 to the agent pod, accepting only
// the key in FAKEAPI_KEY, and prints a status line (JSON) to stdout each
// time it changes — requests answered, how many carried the expected key
// and how many another credential (never a value), the tool results the
// agent sent back — so a test reads what arrived with `kubectl logs`.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/agentbox/agentbox/internal/fakemodel"
)

func main() {
	var script []fakemodel.Step
	if err := json.Unmarshal([]byte(os.Getenv("FAKEAPI_SCRIPT")), &script); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox-fakeapi: FAKEAPI_SCRIPT: %v\n", err)
		os.Exit(2)
	}
	key := os.Getenv("FAKEAPI_KEY")
	if key == "" {
		fmt.Fprintln(os.Stderr, "agentbox-fakeapi: FAKEAPI_KEY is empty")
		os.Exit(2)
	}
	addr := os.Getenv("FAKEAPI_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	srv, err := fakemodel.StartWith(addr, script, fakemodel.Options{Keys: []string{key}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentbox-fakeapi: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("{\"listening\":%q}\n", addr)
	last := ""
	for {
		ok, other := 0, 0
		for _, c := range srv.Credentials() {
			if c == key {
				ok++
			} else {
				other++
			}
		}
		st, _ := json.Marshal(map[string]any{"requests": len(srv.Requests()), "key_ok": ok, "key_other": other,
			"results": srv.ToolResults(), "guide": srv.Saw("You are running inside agentbox")})
		if string(st) != last {
			fmt.Println(string(st))
			last = string(st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
