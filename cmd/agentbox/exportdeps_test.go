package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoOpenTelemetryInAgentbox: agentbox's binary links no OpenTelemetry
// code, nor the gRPC and protobuf it brings: their package initialisation
// cost every launch ~3.5 ms. Export runs in agentbox-export
// (cmd/agentbox-export), which agentbox starts or execs.
func TestNoOpenTelemetryInAgentbox(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("reason: go list -deps: %v\n%s", err, out)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "go.opentelemetry.io/") || strings.HasPrefix(p, "google.golang.org/grpc") || strings.HasPrefix(p, "google.golang.org/protobuf") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("cmd/agentbox links %d OpenTelemetry/gRPC/protobuf packages (export belongs in cmd/agentbox-export), e.g. %s", len(bad), strings.Join(bad[:min(5, len(bad))], ", "))
	}
}
