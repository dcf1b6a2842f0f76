package review

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/internal/checkpoint"
	"github.com/agentbox/agentbox/internal/layer"
)

// RunRecord is one recorded run as agentbox changes --runs lists it.
type RunRecord struct {
	Run       string    `json:"run"`
	Time      time.Time `json:"time"`
	Workspace string    `json:"workspace,omitempty"`
	// Command is the run's command (redacted, as in its checkpoint
	// index), or for a run recorded before agentbox kept it, the first
	// program it started.
	Command []string `json:"command,omitempty"`
	// Exit is the run's exit status (nil: not recorded, or still
	// running, or its agentbox was killed).
	Exit *int `json:"exit,omitempty"`
	// Changed counts the paths that differ from its start to its end;
	// -1 when its checkpoints were pruned.
	Changed int `json:"changed"`
	// Of is the run an undo restored (the record is that undo).
	Of string `json:"of,omitempty"`
	// Store is the checkpoint store holding it.
	Store string `json:"store"`
}

// workspaceOf is the workspace of a run's areas (target/'s parent).
func workspaceOf(areas []checkpoint.Area) string {
	for _, a := range areas {
		if a.Name == "target" {
			return filepath.Dir(a.Dir)
		}
	}
	return ""
}

// RunRecords lists the runs of the checkpoint store with their command,
// exit status and count of changed paths, oldest first.
func RunRecords(store string) ([]RunRecord, error) {
	starts, err := checkpoint.Runs(store)
	if err != nil {
		return nil, err
	}
	out := make([]RunRecord, 0, len(starts))
	for _, s := range starts {
		rec := RunRecord{Run: s.Run, Time: s.Time, Workspace: workspaceOf(s.Areas), Of: s.Of, Store: store, Changed: -1, Command: s.Argv}
		if idx, err := checkpoint.ReadIndex(store, s.Run); err == nil {
			for _, e := range idx {
				if e.Kind == checkpoint.IndexCommand && rec.Command == nil {
					rec.Command = e.Argv
				}
				if e.Kind == checkpoint.IndexEnd {
					rec.Exit = e.Exit
				}
			}
		}
		if ch, err := checkpoint.NetChanges(store, s.Run); err == nil {
			rec.Changed = len(ch)
		}
		out = append(out, rec)
	}
	return out, nil
}

// RunPlace is where a run's records are: its workspace, the checkpoint
// store holding its checkpoints and the review store holding its layer
// ("" for what it has none of).
type RunPlace struct {
	Run, Workspace, CheckpointStore, ReviewStore string
}

// ErrUnknownRun is wrapped by LocateRun's error for a run id found in no
// default store.
var ErrUnknownRun = errors.New("no such run")

// LocateRun finds run by its id alone, from any directory: in the review
// layers' default store and in every workspace's default checkpoint
// store (under $XDG_STATE_HOME/agentbox). A run recorded in a store given
// with --checkpoint-store or --review-store is not found here. The stores
// are out of every sandbox's reach (the plan refuses a grant that writes
// them), so what they say of a run is agentbox's own record.
func LocateRun(run string) (*RunPlace, error) {
	if err := checkpoint.ValidRunID(run); err != nil {
		return nil, err
	}
	pl := &RunPlace{Run: run}
	if l, err := layer.Open(layer.DefaultRoot(), run); err == nil {
		pl.ReviewStore, pl.Workspace = layer.DefaultRoot(), l.Meta.Workspace
	}
	base := filepath.Dir(checkpoint.DefaultDir("/"))
	idx, _ := filepath.Glob(filepath.Join(base, "*", "runs", run+".jsonl"))
	for _, p := range idx {
		store := filepath.Dir(filepath.Dir(p))
		ents, err := checkpoint.ReadIndex(store, run)
		if err != nil {
			continue
		}
		ws := workspaceOf(ents[0].Areas)
		// the store's directory is named by its workspace: an index in
		// another workspace's store is not this run's record
		if ws == "" || checkpoint.DefaultDir(ws) != store {
			continue
		}
		pl.CheckpointStore = store
		if pl.Workspace == "" {
			pl.Workspace = ws
		}
		break
	}
	if pl.CheckpointStore == "" && pl.ReviewStore == "" {
		return nil, fmt.Errorf("run %s: %w in %s or %s (a run recorded with --checkpoint-store or --review-store is found with that flag)",
			run, ErrUnknownRun, base, layer.DefaultRoot())
	}
	return pl, nil
}

// LatestRun is the most recent run recorded in the checkpoint store (or,
// with store "", in every workspace's default store), with its record;
// nil when there is none.
func LatestRun(store string) (*RunRecord, error) {
	stores := []string{store}
	if store == "" {
		stores, _ = filepath.Glob(filepath.Join(filepath.Dir(checkpoint.DefaultDir("/")), "*"))
	}
	var latest *checkpoint.IndexEntry
	where := ""
	for _, s := range stores {
		runs, err := checkpoint.Runs(s)
		if err != nil {
			if store != "" {
				return nil, err
			}
			continue
		}
		if n := len(runs); n > 0 && (latest == nil || runs[n-1].Time.After(latest.Time)) {
			latest, where = &runs[n-1], s
		}
	}
	if latest == nil {
		return nil, nil
	}
	recs, err := RunRecords(where)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if recs[i].Run == latest.Run {
			return &recs[i], nil
		}
	}
	return nil, nil
}
