package helper

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if Main() {
		return
	}
	os.Exit(m.Run())
}

// startHelper starts this test binary as the helper, writes data on its
// config pipe and returns the helper's status line and exit code.
func startHelper(t *testing.T, data []byte) (string, int) {
	t.Helper()
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer goW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: os.Args[0], Args: []string{Argv0}, ExtraFiles: []*os.File{cfgR, goR, stW}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cfgR.Close()
	goR.Close()
	stW.Close()
	cfgW.Write(data)
	cfgW.Close()
	status, _ := io.ReadAll(stR)
	cmd.Wait()
	return strings.TrimSpace(string(status)), cmd.ProcessState.ExitCode()
}

// TestHelperRefusesOtherFormat: a helper binary of another build says so
// on the status pipe (which the launcher prints) and runs nothing.
func TestHelperRefusesOtherFormat(t *testing.T) {
	data := (&Config{Argv: []string{"/bin/true"}, ParentPid: os.Getpid()}).Encode(nil)
	data[3] = FormatVersion + 1
	status, code := startHelper(t, data)
	if code != ExitFailure || !strings.Contains(status, "from another agentbox build") || !strings.Contains(status, fmt.Sprintf("format %d, this helper reads %d", FormatVersion+1, FormatVersion)) {
		t.Errorf("exit %d, status %q", code, status)
	}
	status, code = startHelper(t, []byte(`{"Argv":["/bin/true"]}`))
	if code != ExitFailure || !strings.Contains(status, "bad magic") {
		t.Errorf("JSON config: exit %d, status %q", code, status)
	}
}
