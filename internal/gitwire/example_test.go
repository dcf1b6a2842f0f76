package gitwire_test

import (
	"io"
	"net/http"

	"github.com/agentbox/agentbox/internal/gitwire"
)

// A proxy in front of a git host: the commands are checked before anything
// goes upstream; the body then streams through the Guard, which keeps the
// pack's end from the host unless every update is proven a fast-forward.
func ExampleGuard() {
	handler := func(w http.ResponseWriter, r *http.Request, upstream func(*http.Request) (*http.Response, error)) {
		ap := gitwire.Approval{Refs: []string{"refs/heads/feature/*"}, Create: true}
		g := gitwire.NewGuard(r.Body, ap, gitwire.Limits{})
		defer g.Close()
		req, err := g.Commands()
		if err != nil {
			w.Header().Set("Content-Type", gitwire.ResultContentType)
			gitwire.WriteRefusal(w, req, err) // git: "! [remote rejected] ref (agentbox: ...)"
			return
		}
		out := r.Clone(r.Context())
		out.Body, out.ContentLength = io.NopCloser(g), -1
		out.Header.Del("Content-Length")
		resp, err := upstream(out)
		if verdict := g.Err(); verdict != nil {
			// Refused in the pack (a force push): the host got no
			// complete pack; answer as receive-pack would.
			if resp != nil {
				resp.Body.Close()
			}
			w.Header().Set("Content-Type", gitwire.ResultContentType)
			gitwire.WriteRefusal(w, req, verdict)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}
	_ = handler
}
