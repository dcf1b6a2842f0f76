package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyedChain: a keyed log verifies with its key; a forged log that
// recomputes the chain (hashes, head file) without the key passes unkeyed
// verification with a warning and fails keyed verification; key rotation
// keeps older lines verifiable with the old key.
func TestKeyedChain(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.jsonl")
	key, err := LoadKey(log+KeySuffix, true)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(log + KeySuffix); st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode().Perm())
	}
	w, err := OpenWith(log, Options{Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		must(t, w.Write(Event{Event: EventExec, Action: "tool:exec:ls", Decision: DecisionDeny}))
	}
	w.Close()
	if res, err := VerifyFile(log); err != nil || res.Lines != 5 || res.MACsChecked != 5 {
		t.Fatalf("keyed VerifyFile = %+v, %v", res, err)
	}

	// The forger rewrites decision deny -> allow and recomputes every hash
	// and the head file, but has no key.
	forged := filepath.Join(dir, "forged.jsonl")
	data, _ := os.ReadFile(log)
	fw, err := Open(forged)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e Event
		must(t, json.Unmarshal([]byte(l), &e))
		e.Decision = DecisionAllow
		must(t, fw.Write(e))
	}
	fw.Close()
	res, err := VerifyFile(forged)
	if err != nil || !res.Unkeyed {
		t.Errorf("forged log without a key: %+v, %v; want it to verify with the unkeyed warning", res, err)
	}
	f, _ := os.Open(forged)
	defer f.Close()
	if _, err := VerifyKeyed(f, nil, []Key{key}); err == nil || !strings.Contains(err.Error(), "no MAC") {
		t.Errorf("forged log with the key: %v; want it refused", err)
	}
	// Copying the MACs over does not help: the signed bytes changed.
	copied := strings.ReplaceAll(string(data), `"decision":"deny"`, `"decision":"allow"`)
	if _, err := VerifyKeyed(strings.NewReader(copied), nil, []Key{key}); err == nil || !strings.Contains(err.Error(), "MAC does not match") {
		t.Errorf("edited keyed log: %v; want a MAC mismatch", err)
	}

	// Rotation: a new key for new lines; both keys verify the whole log.
	must(t, os.Rename(log+KeySuffix, filepath.Join(dir, "old.key")))
	key2, err := LoadKey(log+KeySuffix, true)
	if err != nil || key2.ID == key.ID {
		t.Fatalf("new key %v %v", key2.ID, err)
	}
	w2, _ := OpenWith(log, Options{Key: &key2})
	must(t, w2.Write(Event{Event: EventExec}))
	w2.Close()
	if _, err := VerifyFile(log); err == nil || !strings.Contains(err.Error(), "which was not given") {
		t.Errorf("rotated key, old one not given: %v", err)
	}
	if _, err := VerifyFilesKeyed([]Key{key, key2}, log); err != nil {
		t.Errorf("both keys: %v", err)
	}
	// A key file others can read is refused.
	os.Chmod(log+KeySuffix, 0o644)
	if _, err := LoadKey(log+KeySuffix, false); err == nil {
		t.Error("world-readable key accepted")
	}
}
