package checkpoint

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// StepReader reads the files of one step of run (from checkpoint before
// to after) from the store: Read(p, false) is p ("target/proj/.git/HEAD")
// at before, Read(p, true) at after, at most limit bytes; ok false when
// it was no regular file then. The manifests are loaded once, for
// readers of many paths (agentbox changes' git summaries).
type StepReader struct {
	dir           string
	areas         []Area
	ld            *loader
	before, after string
	limit         int64
	maps          map[string][]map[string]Entry // checkpoint id -> per area
}

// NewStepReader returns a StepReader of the store dir for the step.
func NewStepReader(dir string, areas []Area, before, after string, limit int64) *StepReader {
	return &StepReader{dir: dir, areas: areas, ld: newLoader(dir, areas), before: before, after: after, limit: limit}
}

// Read implements the reader (see StepReader).
func (r *StepReader) Read(p string, after bool) ([]byte, bool) {
	id := r.before
	if after {
		id = r.after
	}
	if id == "" {
		return nil, false
	}
	maps, ok := r.maps[id]
	if !ok {
		ms, err := r.ld.load(id)
		if err != nil {
			return nil, false
		}
		for _, m := range ms {
			maps = append(maps, index(m))
		}
		if r.maps == nil {
			r.maps = map[string][]map[string]Entry{}
		}
		r.maps[id] = maps
	}
	for i, a := range r.areas {
		rel, ok := strings.CutPrefix(p, a.Name+"/")
		if !ok {
			continue
		}
		e, ok := maps[i][rel]
		if !ok || e.Kind != File {
			return nil, false
		}
		f, err := os.Open((&Store{dir: filepath.Join(r.dir, a.Name)}).objectPath(e.Hash))
		if err != nil {
			return nil, false
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, r.limit))
		return b, err == nil
	}
	return nil, false
}
