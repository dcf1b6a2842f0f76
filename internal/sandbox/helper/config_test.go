package helper

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fullConfig sets every field, so a field Encode forgets fails the round
// trip.
func fullConfig() *Config {
	return &Config{
		Argv:               []string{"sh", "-c", "echo ü"},
		Env:                []string{"PATH=/bin", "HOME=/w/agents/a/home"},
		Dir:                "/w/target",
		ParentPid:          4242,
		Rules:              []Rule{{Path: "/usr", Access: 0x7fff, Optional: false}, {Path: "/lib64", Access: 1, Optional: true}},
		TCPConnect:         []uint16{443, 3128},
		TCPBind:            []uint16{65535},
		BestEffort:         true,
		Rlimits:            []Rlimit{{Resource: 4, Name: "core"}, {Resource: 7, Name: "nofile", Cur: 4096, Max: ^uint64(0)}},
		DenyUnixSockets:    true,
		RunAs:              &Credential{UID: 1000, GID: 1000, Groups: []int{27, 1000}},
		ReadOnlyOutside:    []string{"/w/target", "/w/feedback"},
		ReadOnlyBestEffort: true,
		NetNS:              true,
		Forward:            []uint16{8080},
		ExecNotify:         true,
		Overlay:            &Overlay{Target: "/w/target", Upper: "/s/layers/r/upper", Work: "/s/layers/r/work"},
		IsolateNet:         true,
		NewPID:             true,
		LandlockABI:        3,
		Caches: []CacheLayer{{Name: "go-build", Lower: "/root/.cache/go-build", Upper: "/w/agents/a/hostcache/go-build/upper",
			Work: "/w/agents/a/hostcache/go-build/work", Target: "/w/agents/a/cache/go-build"},
			{Name: "go-mod", Lower: "/root/go/pkg/mod", Upper: "/u", Work: "/w", Target: "/root/go/pkg/mod", Access: 0x7fff, Fd: 9}},
	}
}

func TestConfigRoundTrip(t *testing.T) {
	for name, c := range map[string]*Config{
		"full":                   fullConfig(),
		"minimal":                {Argv: []string{"true"}},
		"no run-as, empty lists": {Argv: []string{"x"}, Env: []string{}, Rules: nil, Rlimits: []Rlimit{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(c.Encode(nil))
			if err != nil {
				t.Fatal(err)
			}
			// Empty and nil lists travel alike.
			want := *c
			for _, l := range []*[]string{&want.Env, &want.Argv, &want.ReadOnlyOutside} {
				if len(*l) == 0 {
					*l = nil
				}
			}
			if len(want.Rlimits) == 0 {
				want.Rlimits = nil
			}
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, &want)
			}
		})
	}
}

// TestEncodeGolden pins the layout: when it changes, bump FormatVersion
// (a helper binary of another build must refuse the config, not misread
// it) and update the golden bytes.
func TestEncodeGolden(t *testing.T) {
	c := &Config{Argv: []string{"true"}, Dir: "/w", ParentPid: 300, Rules: []Rule{{Path: "/", Access: 5, Optional: true}},
		TCPConnect: []uint16{443}, Rlimits: []Rlimit{{Resource: 4, Name: "core", Cur: 1, Max: 2}},
		RunAs: &Credential{UID: 1, GID: 2, Groups: []int{3}}, ReadOnlyOutside: []string{"/w"}, Forward: []uint16{80}, ExecNotify: true}
	const golden = "41424806" + "30" + "010474727565" + "00" + "022f77" + "ac02" + "01012f0501" + "01bb03" + "00" +
		"010404636f72650102" + "01020103" + "01022f77" + "0150" + "00" + "00"
	if got := hex.EncodeToString(c.Encode(nil)); got != golden {
		t.Errorf("the encoded layout changed: bump FormatVersion and update the golden bytes\n got %s\nwant %s", got, golden)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := fullConfig().Encode(nil)
	minimal := (&Config{Argv: []string{"x"}}).Encode(nil)
	fourPaths := append(minimal[:len(minimal)-1:len(minimal)-1], 1, 1, 'a', 1, 'b', 1, 'c', 1, 'd')
	other := bytes.Clone(good)
	other[3] = FormatVersion + 1
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":             {nil, "bad magic"},
		"json":              {[]byte(`{"Argv":["true"]}`), "bad magic"},
		"other version":     {other, "config format differs"},
		"truncated":         {minimal[:len(minimal)-1], "truncated"},
		"trailing":          {append(bytes.Clone(good), 0), "trailing bytes"},
		"unknown flag":      {[]byte("ABH\x06\x80\x04"), "flags"},
		"huge count":        {[]byte("ABH\x06\x00\xff\xff\xff\xff\x0f"), "argv count"},
		"count past data":   {[]byte("ABH\x06\x00\x05\x01a"), "exceeds"},
		"overlong varint":   {[]byte("ABH\x06\x80\x00"), "overlong"},
		"varint overflow":   {[]byte("ABH\x06\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"), "overflows"},
		"port out of range": {append([]byte("ABH\x06\x00\x00\x00\x00\x00\x00\x01"), 0x80, 0x80, 0x04), "out of range"},
		"cache cut short":   {fourPaths, "cache target"},
		"bool not 0 or 1":   {[]byte("ABH\x06\x00\x00\x00\x00\x00\x01\x00\x00\x02"), "rule optional"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Decode(other); !errors.Is(err, ErrFormat) {
		t.Errorf("another version: %v is not ErrFormat", err)
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts encodes back to
// exactly the input (the encoding is canonical, so a config cannot be read
// two ways).
func FuzzDecode(f *testing.F) {
	f.Add(fullConfig().Encode(nil))
	f.Add((&Config{Argv: []string{"true"}}).Encode(nil))
	f.Add([]byte("ABH\x06\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		if again := c.Encode(nil); !bytes.Equal(again, data) {
			t.Fatalf("accepted %x but encodes back to %x", data, again)
		}
	})
}

func TestLookPath(t *testing.T) {
	if p, err := lookPath("sh", "/nonexistent:/bin:/usr/bin"); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("lookPath(sh) = %q, %v", p, err)
	}
	if _, err := lookPath("no-such-prog-xyz", "/bin"); err == nil {
		t.Errorf("found a missing program")
	}
	if _, err := lookPath("", "/bin"); err == nil {
		t.Errorf("accepted an empty name")
	}
	if _, err := lookPath("/etc/passwd", ""); err != nil {
		t.Errorf("names with a slash are used as given: %v", err)
	}
}
