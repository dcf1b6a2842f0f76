package fleet

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// A published head: a host says, signed with its audit key, which line
// its log has reached (the log's head file: seq and line hash). Checked
// against what a collector received, it shows lines cut off the end of a
// chain at the source (or lost on the way) after its last run exited,
// which leave no gap in seq (`agentbox audit head --json` prints one;
// `agentbox audit verify --heads FILE` checks them).

// headType is the type field of a published head.
const headType = "agentbox-audit-head"

// Head is one host's published head.
type Head struct {
	Type    string `json:"type"` // headType
	Version int    `json:"version"`
	Host    string `json:"host"`
	Log     string `json:"log"`
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"` // LineHash of the line at Seq
	Time    string `json:"time"` // RFC 3339, when it was read
	Kid     string `json:"kid"`
	Mac     string `json:"mac"` // hex HMAC-SHA256 of signedHead under the key Kid names
}

func (h Head) signed() []byte {
	return fmt.Appendf(nil, "%s v%d host=%s log=%s seq=%d hash=%s time=%s kid=%s",
		headType, h.Version, strconv.Quote(h.Host), strconv.Quote(h.Log), h.Seq, h.Hash, h.Time, h.Kid)
}

func headMAC(k audit.Key, h Head) string {
	m := hmac.New(sha256.New, k.Bytes)
	m.Write(h.signed())
	return hex.EncodeToString(m.Sum(nil))
}

// SignHead makes host's published head of the log at path, whose head
// file holds h, signed with the log's key k.
func SignHead(k audit.Key, host, log string, h audit.Head, now time.Time) Head {
	out := Head{Type: headType, Version: 1, Host: host, Log: log, Seq: h.Seq, Hash: h.Hash,
		Time: now.UTC().Format(time.RFC3339), Kid: k.ID}
	out.Mac = headMAC(k, out)
	return out
}

// ParseHeads reads published heads: JSON objects one after another (one
// per line, as `audit head --json` prints them, or concatenated). name
// is the file, for messages.
func ParseHeads(name string, b []byte) ([]Head, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out []Head
	for n := 1; ; n++ {
		var h Head
		err := dec.Decode(&h)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: head %d: %w", name, n, err)
		}
		if h.Type != headType || h.Version != 1 {
			return nil, fmt.Errorf("%s: head %d: type %q version %d: want %s version 1", name, n, h.Type, h.Version, headType)
		}
		if h.Host == "" || h.Seq == 0 || len(h.Hash) != 64 || h.Kid == "" || len(h.Mac) != 64 {
			return nil, fmt.Errorf("%s: head %d: want host, seq, a 64-hex-digit hash, kid and mac", name, n)
		}
		if _, err := hex.DecodeString(h.Hash + h.Mac); err != nil {
			return nil, fmt.Errorf("%s: head %d: hash or mac is not hex", name, n)
		}
		out = append(out, h)
	}
}

// CheckHeads adds to rep what the published heads show about the lines
// received: a head whose MAC is not its host's (forged), a chain that
// ends before its host's head (missing: cut at the source or lost), a
// line at the head's seq that is not the one the head names (forged),
// and a head for a chain nothing was received of (missing). A head is
// checked against the chain of its host and log.
func CheckHeads(rep *Report, lines []Line, keys Keys, heads []Head) {
	hashes := map[chainKey]map[uint64]string{}
	for _, l := range lines {
		ev, err := audit.ParseLine(l.Bytes)
		if err != nil {
			continue
		}
		k := chainKey{l.Host, l.Log}
		if hashes[k] == nil {
			hashes[k] = map[uint64]string{}
		}
		hashes[k][ev.Seq] = audit.LineHash(l.Bytes)
	}
	for _, h := range heads {
		k := chainKey{h.Host, h.Log}
		i := -1
		for j := range rep.Chains {
			if rep.Chains[j].Host == h.Host && rep.Chains[j].Log == h.Log {
				i = j
			}
		}
		if i < 0 {
			rep.Chains = append(rep.Chains, Chain{Host: h.Host, Log: h.Log})
			i = len(rep.Chains) - 1
		}
		c := &rep.Chains[i]
		add := func(f Finding) {
			f.Host, f.Log = h.Host, h.Log
			c.Findings = append(c.Findings, f)
			if f.Fails() {
				c.Whole = false
			}
		}
		switch owner, known := keys.owner[h.Kid]; {
		case len(keys.byHost[h.Host]) == 0:
			add(Finding{Kind: Unkeyed, Seq: h.Seq, Detail: "published head: no key given for this host, its MAC not checked (--host-key HOST=FILE)"})
		case known && owner != h.Host:
			add(Finding{Kind: Forged, Seq: h.Seq, Detail: fmt.Sprintf("published head signed with host %s's key %s", owner, h.Kid)})
			continue
		default:
			ok := false
			for _, hk := range keys.byHost[h.Host] {
				if hk.ID == h.Kid && hmac.Equal([]byte(headMAC(hk, h)), []byte(h.Mac)) {
					ok = true
				}
			}
			if !ok {
				add(Finding{Kind: Forged, Seq: h.Seq, Detail: fmt.Sprintf("published head's MAC does not match (key %s): the head was changed", h.Kid)})
				continue
			}
		}
		got, ok := hashes[k][h.Seq]
		switch {
		case c.Lines == 0 && len(hashes[k]) == 0:
			add(Finding{Kind: Missing, Seq: 1, SeqEnd: h.Seq, Detail: fmt.Sprintf("the host published its head at seq %d (%s) and nothing of this log was received", h.Seq, h.Time)})
		case c.LastSeq < h.Seq:
			add(Finding{Kind: Missing, Seq: c.LastSeq + 1, SeqEnd: h.Seq, Detail: fmt.Sprintf("the chain ends at seq %d, before the head the host published at seq %d (%s): its tail was cut at the source or lost on the way", c.LastSeq, h.Seq, h.Time)})
		case !ok:
			// A gap at the head's seq: already a finding of Verify.
		case got != h.Hash:
			add(Finding{Kind: Forged, Seq: h.Seq, Detail: "the line received at the published head's seq is not the one the host's head names"})
		}
	}
}
