package gitwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ResultContentType is the Content-Type of a receive-pack answer.
const ResultContentType = "application/x-git-receive-pack-result"

// WriteRefusal writes the receive-pack answer that refuses the push req:
// "unpack ok" (or the unpack error when the bytes were malformed), then
// "ng <ref> <reason>" for every command — the refused one with refused's
// reason, the others with ReasonOtherRef — so git prints
// "! [remote rejected] <ref> (<reason>)" for each and exits non-zero. With
// side-band(-64k) the report goes in band 1 and the reason is also shown
// on band 2 ("remote: ..."). The caller sets Content-Type to
// ResultContentType and status 200 (git reads no report from an error
// status).
//
// req may be nil (the command section could not be parsed): then only the
// unpack status line is written, without side-band, and git reports the
// push as failed with it.
func WriteRefusal(w io.Writer, req *Request, refused error) error {
	var r *RefusedError
	if !errors.As(refused, &r) {
		r = &RefusedError{Reason: ReasonMalformed, Detail: fmt.Sprint(refused), Offset: -1}
	}
	var rep bytes.Buffer
	unpack := "ok"
	if r.Ref == "" {
		unpack = "error " + r.Short()
	}
	pktLine(&rep, "unpack "+unpack+"\n")
	if req != nil {
		for _, c := range req.Commands {
			why := ReasonOtherRef
			text := string(why)
			if r.Ref == "" || c.Ref == r.Ref {
				text = r.Short()
			}
			pktLine(&rep, "ng "+c.Ref+" agentbox: "+oneLine(text)+"\n")
		}
	}
	rep.WriteString("0000")
	var out bytes.Buffer
	if req != nil && !req.Has("report-status") && !req.Has("report-status-v2") {
		// The client asked for no report: it learns of the refusal only
		// from the progress band, if any.
		rep.Reset()
	}
	if sb := req.SideBand(); sb > 0 {
		pktLine(&out, "\x02agentbox: push refused: "+oneLine(r.Error())+"\n")
		b := rep.Bytes()
		for len(b) > 0 {
			n := min(len(b), sb-5)
			pktLine(&out, "\x01"+string(b[:n]))
			b = b[n:]
		}
		out.WriteString("0000")
	} else {
		out.Write(rep.Bytes())
	}
	_, err := w.Write(out.Bytes())
	return err
}

// pktLine appends s as one pkt-line.
func pktLine(b *bytes.Buffer, s string) {
	fmt.Fprintf(b, "%04x", len(s)+4)
	b.WriteString(s)
}
