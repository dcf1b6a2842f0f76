package checkpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// journalRespCases are answers of the journal and edge cases around
// them; fast: parseJournalResp reads it itself (without json.Unmarshal).
var journalRespCases = []struct {
	in   string
	fast bool
}{
	// answers as the journal writes them (TestParseJournalRespReal
	// captures more from a running journal)
	{`{"ok":true,"gen":1,"areas":[{"base":{"id":"run0.0","root":"73d0bff693facf31b8804b98ba306345ec89d3fef450e0e116f84790bfc95419","excluded":["node_modules"]}}],"seq":2}` + "\n", true},
	{`{"ok":false,"gen":4,"why":"not the checkpoint this journal vouches for","seq":6}` + "\n", true},
	{`{"ok":true,"gen":6,"areas":[{"dirty":["pkg"],"base":{"id":"run1.0","root":"53c8f3e213a416f501cb94d15c7056b0a13a962c5b467e50da76e90b3206f428","excluded":["node_modules"],"dirs":[{"dir":"pkg","tree":"85cc6d942a90c0a51666d667f39642cc60a0bf062e53b2123d5c6d5c9b3725ea","kids":[{"path":"pkg/f00.go","kind":"file","mode":420,"size":17,"hash":"99e863fafe8e70d9475426d9047e49402f92200ac81d91e17baa9478524a8506","mtime":1795893775721438615,"ctime":1795893775721438615,"ino":13755054},{"path":"pkg/new \"file\"\t\u2028é.go","kind":"file","mode":420,"size":12,"hash":"a7b92614d2024fe2c230fc2384eb004c430483cd4ce7c7c12aeed66e69342a07","mtime":1795893780572030183,"ctime":1795893780572030183,"ino":14189404}]},{"dir":".","tree":"53c8f3e213a416f501cb94d15c7056b0a13a962c5b467e50da76e90b3206f428","kids":[{"path":".git","kind":"dir","mode":493},{"path":"link","kind":"symlink","mode":0,"link":"src/main.go"},{"path":"pkg","kind":"dir","mode":493}],"subs":{".git":"849a156f69d89cceae70fa9cb89f9a6f575aa1c444b5a60a1c15ce24e6534b56","pkg":"85cc6d942a90c0a51666d667f39642cc60a0bf062e53b2123d5c6d5c9b3725ea"}}]}}],"pruned":{"Removed":["run0.0","run1.0"],"Freed":196608,"Size":0},"seq":8}` + "\n", true},
	{`{"ok":true,"gen":3,"areas":[{}],"seq":2}` + "\n", true},
	{`{"ok":false,"gen":0,"why":"not the areas this journal follows"}` + "\n", true},
	{`{"ok":true,"gen":0}`, true},
	{`{"ok":true,"gen":7,"areas":[{"dirty":["pkg"],"base":{"id":"run0.1","root":"9f86d081884c7d65","excluded":[".git"],"dirs":[{"dir":"","tree":"ab12","subs":{"pkg":"cd34"},"depth":0},{"dir":"pkg","tree":"cd34","kids":[{"path":"pkg/f00.go","kind":"file","mode":420,"size":20,"hash":"e3b0","mtime":1764334800123456789,"ctime":1764334800123456789,"ino":1234567},{"path":"pkg/l","kind":"symlink","mode":511,"link":"../x"},{"path":"pkg/d","kind":"dir","mode":1517}],"depth":2}]}},{"all":true}],"pruned":{"Removed":["run0.0"],"Freed":4096,"Size":-1},"seq":18446744073709551614}`, true},
	{" \t\r\n{ \"ok\" : true , \"areas\" : [ { \"dirty\" : [ ] } , { \"base\" : null } ] } \n\n", true},
	// strings: escapes, \u, surrogate pairs, lone surrogates, invalid UTF-8
	{`{"why":"a\"b\\c\/d\be\ff\ng\rh\ti"}`, true},
	{`{"why":"\u0000\u00e9\u20AC\uffff"}`, true},
	{`{"why":"\ud83d\ude00 x"}`, true},
	{`{"why":"\ud83d x \ude00 \ud83d\u0041 \ud83d\ud83d\ude00"}`, true},
	{"{\"why\":\"\xff\xfe \xe2\x82 \xed\xa0\x80 \xef\xbf\xbd \xc3\xa9\x7f\"}", true},
	{`{"areas":[{"base":{"id":"a","root":"b","dirs":[{"dir":"\u00e9","subs":{"\u00e9\n":"x","a":"1","a":"2"}}]}}]}`, true},
	// null: the zero value
	{`{"ok":null,"gen":null,"areas":null,"why":null,"pruned":null,"seq":null}`, true},
	{`{"areas":[{"all":null,"dirty":null,"base":{"id":null,"root":null,"excluded":null,"dirs":[{"dir":null,"tree":null,"kids":null,"subs":null,"depth":null}]}}]}`, true},
	{`{"areas":[{"base":{"id":"","root":"","dirs":[{"dir":"","kids":[{"path":null,"kind":null,"mode":null,"size":null,"hash":null,"link":null,"mtime":null,"ctime":null,"ino":null}]}]}}],"pruned":{"Removed":null,"Freed":null,"Size":null}}`, true},
	{`{"areas":[],"pruned":{}}`, true},
	// numbers at their limits
	{`{"gen":18446744073709551615,"seq":0}`, true},
	{`{"areas":[{"base":{"id":"","root":"","dirs":[{"dir":"","depth":-9223372036854775808,"kids":[{"path":"","mode":4294967295,"size":-0,"mtime":9223372036854775807,"ino":18446744073709551615}]}]}}]}`, true},
	// json.Unmarshal's to read (fallback) or reject
	{`{"gen":18446744073709551616}`, false},
	{`{"gen":-1}`, false},
	{`{"gen":-0}`, false},
	{`{"gen":1.0}`, false},
	{`{"gen":1e2}`, false},
	{`{"gen":01}`, false},
	{`{"gen":"1"}`, false},
	{`{"areas":[{"base":{"dirs":[{"kids":[{"mode":4294967296}]}]}}]}`, false},
	{`{"areas":[{"base":{"dirs":[{"depth":9223372036854775808}]}}]}`, false},
	{`{"OK":true,"Gen":4}`, false},
	{`{"ok":true,"ok":false}`, false},
	{`{"areas":[{"base":{"id":"a"},"base":{"root":"b"}}]}`, false},
	{`{"pruned":{"removed":["x"],"freed":1}}`, false},
	{`{"\u006fk":true}`, false},
	{`{"other":[1,{"x":null}],"ok":true}`, false},
	{`{"areas":[null,{}]}`, false},
	{`{"areas":[{"dirty":["a",null]}]}`, false},
	{`{"areas":[{"base":{"dirs":[{"subs":{"a":null}}]}}]}`, false},
	{`{"ok":"true"}`, false},
	{`{"ok":true}x`, false},
	{`{"ok":true}{}`, false},
	{`{"ok":true,}`, false},
	{`{"ok":true`, false},
	{`{"why":"a`, false},
	{`{"why":"a\`, false},
	{`{"why":"\u12"}`, false},
	{`{"why":"\ud800\uzzzz"}`, false},
	{`{"why":"\x"}`, false},
	{"{\"why\":\"a\tb\"}", false},
	{"{\"why\":\"a\x1fb\"}", false},
	{`{"why":"\u00e9"`, false},
	{`null`, false},
	{`[]`, false},
	{``, false},
	{`{"areas":{}}`, false},
	{`{"areas":[{"all":tru}]}`, false},
	{`{"pruned":[]}`, false},
}

// checkParse: parseJournalResp(in) is json.Unmarshal's result (both an
// error, or both the same value); fast: it read in itself.
func checkParse(t *testing.T, in []byte, fast bool) {
	t.Helper()
	var want journalResp
	werr := json.Unmarshal(in, &want)
	got, gerr := parseJournalResp(in)
	if (werr != nil) != (gerr != nil) || werr == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("parseJournalResp(%q) = %+v, %v\njson.Unmarshal: %+v, %v", in, got, gerr, want, werr)
	}
	r := jreader{b: in}
	var own journalResp
	ok := r.resp(&own) && r.end()
	if ok && (werr != nil || !reflect.DeepEqual(own, want)) {
		t.Errorf("parseJournalResp read %q itself as %+v\njson.Unmarshal: %+v, %v", in, own, want, werr)
	}
	if fast && !ok {
		t.Errorf("parseJournalResp left %q to json.Unmarshal; it should read it itself", in)
	}
}

// TestParseJournalResp: the journal's answers and edge cases decode as
// json.Unmarshal decodes them, the common ones without it; and the
// types have the JSON fields the reader knows, so a field added to one
// fails here until jsonread.go reads it too.
func TestParseJournalResp(t *testing.T) {
	for _, c := range journalRespCases {
		checkParse(t, []byte(c.in), c.fast)
	}
	for _, c := range []struct {
		v    any
		keys []string
	}{
		{journalResp{}, respKeys},
		{journalArea{}, areaKeys},
		{jbase{}, baseKeys},
		{jdir{}, dirKeys},
		{Entry{}, entryKeys},
		{Pruned{}, prunedKeys},
	} {
		rt := reflect.TypeOf(c.v)
		var names []string
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" {
				name = rt.Field(i).Name
			}
			names = append(names, name)
		}
		if got, want := strings.Join(names, " "), strings.Join(c.keys, " "); got != want {
			t.Errorf("%s has the JSON fields %q; jsonread.go reads %q: update both", rt.Name(), got, want)
		}
	}
}

// TestParseJournalRespReal: a running journal's answers — clean, dirty
// with its stat cache, a prune's report, a refusal — are read by
// parseJournalResp itself, to json.Unmarshal's value.
func TestParseJournalRespReal(t *testing.T) {
	root, store, cfg, _ := journalSetup(t)
	jc := dialJournal(store, cfg.Areas, opts.ExcludeNames)
	if jc == nil {
		t.Fatal("the journal did not answer")
	}
	defer func() { jc.close() }()
	raw := func(q journalReq) []byte {
		t.Helper()
		if err := jc.send(q); err != nil {
			t.Fatal(err)
		}
		jc.unread = 0
		line, err := jc.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	head := journalReq{Op: "dirty", Head: true, Roots: make([]string, 1)}
	lines := [][]byte{raw(head)}
	// a file whose name json escapes, in a run's checkpoint the journal
	// is told of; then a change beside it: the answer carries its entry
	write(t, root, "pkg/new \"file\"\t\u2028\u00e9.go", "package pkg\n", 0o644)
	cfg.Run = "run1"
	recordUnchanged(t, cfg)
	write(t, root, "pkg/f03.go", "package pkg // changed\n", 0o644)
	// the journal sees the write once its queue is read: poll for it
	var dirty []byte
	for deadline := time.Now().Add(10 * time.Second); dirty == nil; {
		line := raw(head)
		if strings.Contains(string(line), `"dirs"`) && strings.Contains(string(line), `\t\u2028`) {
			dirty = line
		} else if time.Now().After(deadline) {
			t.Fatalf("no dirty answer with the stat cache: %s", line)
		}
	}
	lines = append(lines, dirty, raw(journalReq{Op: "dirty", Roots: []string{"not-a-root"}}))
	jc.close()
	jc = dialJournal(store, cfg.Areas, opts.ExcludeNames)
	if jc == nil {
		t.Fatal("the journal did not answer again")
	}
	// a prune (its start's answer), then the dirty answer reporting it
	pr := journalReq{Op: "prune", Roots: make([]string, 1), Budget: &Budget{MaxBytes: 1}}
	lines = append(lines, raw(pr))
	var pruned []byte
	for deadline := time.Now().Add(10 * time.Second); pruned == nil; {
		line := raw(head)
		if strings.Contains(string(line), `"pruned"`) {
			pruned = line
		} else if time.Now().After(deadline) {
			t.Fatalf("no answer reporting the prune: %s", line)
		}
	}
	lines = append(lines, pruned)
	for _, l := range lines {
		if testing.Verbose() {
			t.Logf("answer: %s", l)
		}
		checkParse(t, l, true)
	}
	if resp, err := parseJournalResp(dirty); err != nil || resp.Areas[0].Base == nil || len(resp.Areas[0].Base.Dirs) == 0 {
		t.Errorf("dirty answer read as %+v, %v; want its stat cache", resp, err)
	}
}

// FuzzJournalResp: whatever the bytes, parseJournalResp gives
// json.Unmarshal's result, and what it reads itself json.Unmarshal
// reads to the same value.
func FuzzJournalResp(f *testing.F) {
	for _, c := range journalRespCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkParse(t, in, false)
	})
}

// BenchmarkJournalRespDecode: a dirty answer with its stat cache, by
// parseJournalResp and by json.Unmarshal (warm: the first call's cost,
// json building its decoders, is what a launch pays; see the report of
// issue 47).
func BenchmarkJournalRespDecode(b *testing.B) {
	line := []byte(journalRespCases[2].in) // a real dirty answer
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseJournalResp(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var resp journalResp
			if err := json.Unmarshal(line, &resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
