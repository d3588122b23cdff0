package orchestrator

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
)

// ModelRepo is the model repository: the global model's snapshots, one .npz per global round,
// in a directory (the results dir's model-repo/), the newest Keep kept. The global aggregator
// uploads after every round; one started again downloads the latest and continues from it.
type ModelRepo struct {
	Dir  string
	Keep int // snapshots kept (default 3)

	mu     sync.Mutex
	latest int // newest round stored, -1 = none
}

// NewModelRepo opens dir, finding the snapshots already there.
func NewModelRepo(dir string) (*ModelRepo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &ModelRepo{Dir: dir, Keep: 3, latest: -1}
	rounds, err := r.rounds()
	if err != nil {
		return nil, err
	}
	if len(rounds) > 0 {
		r.latest = rounds[len(rounds)-1]
	}
	return r, nil
}

var snapshotName = regexp.MustCompile(`^round-(\d+)\.npz$`)

func (r *ModelRepo) rounds() ([]int, error) {
	ents, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if m := snapshotName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

func (r *ModelRepo) path(round int) string {
	return filepath.Join(r.Dir, fmt.Sprintf("round-%d.npz", round))
}

// Put stores the snapshot of round from body (at most max bytes), atomically: a reader never
// sees half a file. An older round than the latest is stored but does not become the latest.
func (r *ModelRepo) Put(round int, body io.Reader, limit int64) error {
	if round < 0 {
		return fmt.Errorf("round %d: want >= 0", round)
	}
	tmp, err := os.CreateTemp(r.Dir, ".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(body, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("snapshot larger than %d bytes", limit)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.Rename(tmp.Name(), r.path(round)); err != nil {
		return err
	}
	if round > r.latest {
		r.latest = round
	}
	rounds, err := r.rounds()
	if err != nil {
		return err
	}
	keep := max(r.Keep, 1)
	for len(rounds) > keep {
		if rounds[0] != r.latest {
			_ = os.Remove(r.path(rounds[0]))
		}
		rounds = rounds[1:]
	}
	return nil
}

// Latest returns the newest snapshot's round and path; ok is false when there is none.
func (r *ModelRepo) Latest() (round int, path string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest < 0 {
		return 0, "", false
	}
	return r.latest, r.path(r.latest), true
}
