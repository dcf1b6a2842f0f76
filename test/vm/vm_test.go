// Package vm holds the VM matrix (docs/vm.md): agentbox's boundary checked
// in real guest kernels — Debian's 6.1 and 6.12 under software-emulated
// QEMU, systemd on cgroup v2, as root and as a regular user with a lingering
// user manager. TestVMMatrix runs only when AGENTBOX_VM=1 (make test-vm):
// it boots guests for minutes and needs root.
package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// result is one line vmprobe suite prints (test/vm/vmprobe: Result).
type result struct {
	Kernel  string            `json:"kernel"`
	User    string            `json:"user"`
	Context string            `json:"context"`
	Check   string            `json:"check"`
	Result  string            `json:"result"`
	Line    string            `json:"line,omitempty"`
	Exit    int               `json:"exit"`
	Inside  string            `json:"inside,omitempty"`
	Outside string            `json:"outside,omitempty"`
	Claim   map[string]string `json:"claim,omitempty"`
}

// expected is every default-mode check, each of which must pass or be
// refused with a named line, on each kernel for each user.
var expected = []string{
	"launch/session",
	"context-write/session", "context-truncate/session",
	"outside-read/session", "outside-write/session", "outside-chmod/session", "outside-utime/session",
	"shadow-read/session", "parent-list/session", "kill-outside/session",
	"tcp-connect/session", "unix-abstract/session", "unix-path/session", "git-push/session",
	"memory-64M/session", "memory-64M/scope", "pids-32/session", "pids-32/scope",
	"proxy-allow/session", "proxy-refuse/session", "review/session", "undo/session",
}

var users = []string{"root", "dev"}

// names are the words (any one, case-insensitive) by which a refusal line
// names each check's protection. A run refused with a line that does not
// name the protection under check proves nothing about it: the cell fails
// (today's first-missing-feature-only line on 6.1 is such a refusal). The
// launch check accepts any agentbox line.
var names = map[string][]string{
	"context-write":    {"write"},
	"context-truncate": {"truncat"},
	"outside-read":     {"read"},
	"outside-write":    {"write"},
	"outside-chmod":    {"chmod", "metadata", "mount namespace", "read-only"},
	"outside-utime":    {"utime", "metadata", "mount namespace", "read-only"},
	"shadow-read":      {"read"},
	"parent-list":      {"read", "list"},
	"kill-outside":     {"signal"},
	"tcp-connect":      {"tcp", "network"},
	"unix-abstract":    {"abstract", "unix"},
	"unix-path":        {"unix", "socket"},
	"git-push":         {"git", "exec", "supervisor", "ptrace"},
	"memory-64M":       {"memory", "cgroup", "limit"},
	"pids-32":          {"pids", "cgroup", "limit", "process"},
	"proxy-allow":      {"network", "proxy", "namespace"},
	"proxy-refuse":     {"network", "proxy", "namespace"},
	"review":           {"review", "overlay"},
	"undo":             {"checkpoint", "undo"},
}

// namesProtection says whether line names check's protection.
func namesProtection(check, line string) bool {
	words, ok := names[check]
	if !ok {
		return true
	}
	l := strings.ToLower(line)
	for _, w := range words {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// parseResults reads vmprobe's JSON lines. A line that is not a result
// is an error naming name and the line number.
func parseResults(name string, r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var res result
		if err := json.Unmarshal(line, &res); err != nil {
			return out, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		switch res.Result {
		case "pass", "fail", "refused", "info":
		default:
			return out, fmt.Errorf("%s:%d: result %q is none of pass, fail, refused, info", name, n, res.Result)
		}
		if res.Check == "" || res.User == "" || res.Kernel == "" {
			return out, fmt.Errorf("%s:%d: check, user and kernel must be set", name, n)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// verdict is what a cell means for the test: "" when it is acceptable.
func verdict(r *result) string {
	switch {
	case r == nil:
		return "missing (the guest did not report it)"
	case r.Result == "pass":
		return ""
	case r.Result == "refused" && (!strings.HasPrefix(r.Line, "agentbox: ") || strings.Contains(r.Line, "\n")):
		return "refused without agentbox's one line: " + r.Line
	case r.Result == "refused" && !namesProtection(r.Check, r.Line):
		return fmt.Sprintf("refused, but the line does not name this protection (%s): %s", strings.Join(names[r.Check], "/"), r.Line)
	case r.Result == "refused":
		return ""
	default:
		return fmt.Sprintf("held: no (exit %d; inside %q; outside %q%s)", r.Exit, r.Inside, r.Outside, suffix(r.Line))
	}
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// matrix prints kernel × user × check and returns the cells that are not
// acceptable, one line each.
func matrix(w io.Writer, kernels []string, res []result) []string {
	cell := map[string]*result{}
	for i := range res {
		r := &res[i]
		cell[r.Kernel+"|"+r.User+"|"+r.Check+"/"+r.Context] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "check")
	for _, k := range kernels {
		for _, u := range users {
			fmt.Fprintf(tw, "\t%s %s", short(k), u)
		}
	}
	fmt.Fprintln(tw)
	var bad []string
	counts := map[string]int{}
	for _, c := range expected {
		fmt.Fprint(tw, c)
		for _, k := range kernels {
			for _, u := range users {
				r := cell[k+"|"+u+"|"+c]
				s := "-"
				if r != nil {
					s = r.Result
				}
				v := verdict(r)
				switch {
				case s == "refused" && v != "":
					s = "refused-unnamed"
				case s == "fail":
					s = "FAIL"
				}
				counts[s]++
				fmt.Fprintf(tw, "\t%s", s)
				if v != "" {
					bad = append(bad, fmt.Sprintf("%s %s %s: %s", k, u, c, v))
				}
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d pass, %d refused naming the protection, %d refused without naming it, %d FAIL, %d missing, of %d; %d not held\n",
		counts["pass"], counts["refused"], counts["refused-unnamed"], counts["FAIL"], counts["-"], len(expected)*len(kernels)*len(users), len(bad))
	// the lines: refusals as agentbox said them, and what each run claimed
	fmt.Fprintln(w, "\nrefused, with agentbox's line:")
	lines := map[string][]string{}
	for _, r := range res {
		if r.Result == "refused" {
			key := short(r.Kernel) + " " + r.User + ": " + r.Line
			lines[key] = append(lines[key], r.Check+"/"+r.Context)
		}
	}
	keys := make([]string, 0, len(lines))
	for k := range lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s\n      (%s)\n", k, strings.Join(lines[k], " "))
	}
	fmt.Fprintln(w, "\nclaimed at launch, and the guest's context:")
	for _, r := range res {
		switch {
		case r.Check == "launch":
			fmt.Fprintf(w, "  %s %s: %s | landlock=%s network=%s limits=%s\n", short(r.Kernel), r.User,
				r.Claim["launch_line"], r.Claim["event.landlock"], r.Claim["event.network"], r.Claim["event.limits"])
		case r.Result == "info":
			fmt.Fprintf(w, "  %s %s %s: %s\n", short(r.Kernel), r.User, r.Check, strings.ReplaceAll(r.Outside, "\n", " "))
		}
	}
	return bad
}

// claimChecks maps each protection the launch event claims
// (detail "protections": name=mechanism) to the probe checks that try it.
var claimChecks = map[string][]string{
	"truncate":      {"context-truncate"},
	"tcp":           {"tcp-connect"},
	"signals":       {"kill-outside"},
	"abstract-unix": {"unix-abstract"},
	"pathname-unix": {"unix-path"},
	"metadata":      {"outside-chmod", "outside-utime"},
	"files":         {"context-write", "outside-read", "outside-write", "shadow-read"},
}

// claimsMatch holds what each launch event claims against what the probe
// found, per kernel and user: a protection claimed enforced (any mechanism
// but none) whose check did not pass is a claim without effect; one
// claimed as not enforced whose check passed is an effect unclaimed; a
// protection the probe tries that the event does not mention is unclaimed
// too. Refused runs claim nothing (the matrix judges their lines).
func claimsMatch(res []result) []string {
	cell := map[string]*result{}
	for i := range res {
		r := &res[i]
		if r.Context == "session" || r.Context == "" {
			cell[r.Kernel+"|"+r.User+"|"+r.Check] = r
		}
	}
	var bad []string
	for i := range res {
		l := &res[i]
		if l.Check != "launch" || l.Result != "pass" {
			continue
		}
		claimed := map[string]string{}
		for _, part := range strings.Split(l.Claim["event.protections"], "; ") {
			if name, mech, ok := strings.Cut(part, "="); ok {
				claimed[name] = mech
			}
		}
		where := short(l.Kernel) + " " + l.User
		if len(claimed) == 0 {
			bad = append(bad, where+": the launch event claims no protections")
			continue
		}
		for name, checks := range claimChecks {
			mech, ok := claimed[name]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s: %s is tried by the probe but not in the launch event's claims", where, name))
				continue
			}
			none := mech == "none" || strings.HasPrefix(mech, "none ")
			for _, c := range checks {
				r := cell[l.Kernel+"|"+l.User+"|"+c]
				if r == nil || r.Result == "refused" {
					continue
				}
				held := r.Result == "pass"
				switch {
				case !none && !held:
					bad = append(bad, fmt.Sprintf("%s: %s claimed enforced by %s, but %s did not hold", where, name, mech, c))
				case none && held:
					bad = append(bad, fmt.Sprintf("%s: %s claimed not enforced, but %s held", where, name, c))
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// short is a kernel release's major.minor: 6.1.0-31-amd64 → 6.1.
func short(k string) string {
	parts := strings.SplitN(k, ".", 3)
	if len(parts) < 2 {
		return k
	}
	minor := parts[1]
	if i := strings.IndexAny(minor, "-+"); i >= 0 {
		minor = minor[:i]
	}
	return parts[0] + "." + minor
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: not a duration or a number of seconds", name, v)
	}
	return d
}

// TestVMMatrix builds (or takes from the cache) the guest image, boots each
// kernel with agentbox from this tree shared in, and checks the matrix:
// every default-mode check passes or is refused with agentbox's one named
// line. AGENTBOX_VM_REPORT_ONLY=1 prints the matrix and fails only when the
// harness itself fails (no image, a guest that did not report).
func TestVMMatrix(t *testing.T) {
	if os.Getenv("AGENTBOX_VM") != "1" {
		t.Skip("the VM matrix boots QEMU guests for minutes and needs root: run make test-vm (AGENTBOX_VM=1)")
	}
	if f := os.Getenv("AGENTBOX_VM_RESULTS"); f != "" {
		judgeSaved(t, f)
		return
	}
	if os.Getuid() != 0 {
		t.Fatal("the VM matrix needs root (debootstrap, the image cache in /var/cache/agentbox-vm)")
	}
	reportOnly := os.Getenv("AGENTBOX_VM_REPORT_ONLY") == "1"
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	img := image(t, repo)
	t.Logf("image %s ready in %s", img, time.Since(t0).Round(time.Second))

	share := t.TempDir()
	if err := os.Chmod(share, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][2]string{
		{"agentbox", "./cmd/agentbox"}, {"agentbox-helper", "./cmd/agentbox-helper"}, {"vmprobe", "./test/vm/vmprobe"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(share, "bin", b[0]), b[1])
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	inguest, err := os.ReadFile(filepath.Join(repo, "scripts/vm/inguest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(share, "inguest.sh"), inguest, 0o755); err != nil {
		t.Fatal(err)
	}
	if only := os.Getenv("AGENTBOX_VM_ONLY"); only != "" {
		os.WriteFile(filepath.Join(share, "only"), []byte(only), 0o644)
	}

	kb, err := os.ReadFile(filepath.Join(img, "kernels"))
	if err != nil {
		t.Fatal(err)
	}
	var kernels []string
	for _, k := range strings.Fields(string(kb)) {
		if f := os.Getenv("AGENTBOX_VM_KERNELS"); f == "" || strings.Contains(f, short(k)) {
			kernels = append(kernels, k)
		}
	}
	if len(kernels) == 0 {
		t.Fatalf("no kernel in %s/kernels matches AGENTBOX_VM_KERNELS=%q", img, os.Getenv("AGENTBOX_VM_KERNELS"))
	}
	limit := envDuration(t, "AGENTBOX_VM_BOOT_TIMEOUT", 20*time.Minute)
	var all []result
	for _, k := range kernels {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), limit+time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(repo, "scripts/vm/boot.sh"), img, k, share, strconv.Itoa(int(limit.Seconds())))
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("kernel %s: guest ran %s", k, time.Since(start).Round(time.Second))
		if err != nil {
			t.Errorf("kernel %s: boot: %v\n%s\nconsole tail:\n%s", k, err, out, tail(filepath.Join(share, "console-"+k+".log"), 40))
		}
		for _, u := range users {
			f := filepath.Join(share, "out", k, u+".jsonl")
			b, err := os.ReadFile(f)
			if err != nil {
				t.Errorf("kernel %s user %s: no results: %v\nconsole tail:\n%s", k, u, err, tail(filepath.Join(share, "console-"+k+".log"), 40))
				continue
			}
			res, err := parseResults(f, bytes.NewReader(b))
			if err != nil {
				t.Errorf("%v", err)
			}
			if len(res) == 0 {
				t.Errorf("kernel %s user %s: the suite reported nothing; its stderr:\n%s", k, u, tail(filepath.Join(share, "out", k, u+".stderr"), 20))
			}
			all = append(all, res...)
		}
	}
	var buf bytes.Buffer
	bad := append(matrix(&buf, kernels, all), claimsMatch(all)...)
	fmt.Print("\n" + buf.String())
	if dir := os.Getenv("AGENTBOX_VM_OUT"); dir != "" {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "matrix.txt"), buf.Bytes(), 0o644)
		var jl bytes.Buffer
		enc := json.NewEncoder(&jl)
		for _, r := range all {
			enc.Encode(r)
		}
		os.WriteFile(filepath.Join(dir, "results.jsonl"), jl.Bytes(), 0o644)
	}
	t.Logf("VM matrix: %s in all", time.Since(t0).Round(time.Second))
	for _, b := range bad {
		if reportOnly {
			t.Log("not held (report only): " + b)
		} else {
			t.Error(b)
		}
	}
}

// image runs scripts/vm/image.sh and returns the cached image directory it
// prints last.
func image(t *testing.T, repo string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repo, "scripts/vm/image.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/vm/image.sh: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		t.Fatal("scripts/vm/image.sh printed no directory")
	}
	return lines[len(lines)-1]
}

func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// judgeSaved prints and judges the matrix of a results.jsonl a run saved
// (AGENTBOX_VM_OUT), without booting: AGENTBOX_VM_RESULTS=FILE.
func judgeSaved(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := parseResults(file, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var kernels []string
	seen := map[string]bool{}
	for _, r := range res {
		if !seen[r.Kernel] {
			seen[r.Kernel] = true
			kernels = append(kernels, r.Kernel)
		}
	}
	var buf bytes.Buffer
	bad := append(matrix(&buf, kernels, res), claimsMatch(res)...)
	fmt.Print("\n" + buf.String())
	for _, b := range bad {
		if os.Getenv("AGENTBOX_VM_REPORT_ONLY") == "1" {
			t.Log("not held (report only): " + b)
		} else {
			t.Error(b)
		}
	}
}
