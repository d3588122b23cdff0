package kinds

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/kv/server"
	"github.com/continuum-project/continuum/internal/platform"
)

// convergence reports, for every heal event of a run, how long after it each continuum kv
// member held everything its peers across the partition held when their replication streams
// reopened. The members write these catch-ups to their events file with the wall time (package
// server, Event); since every member runs on this host, their clocks are the runner's, and the
// measurement needs no client connection across the partition (a probe's own reconnection
// would be in its figure).
//
// Metrics: kv/<member>/caught_up_after_heal_s and kv/all/converged_after_heal_s (the latest
// member), with one field per heal: heal1, heal2, ... A member that reported no catch-up after
// a heal (its streams never broke) is left out of that heal's figures.
func convergence(out kind.RunOutput) map[string]map[string]float64 {
	var heals []time.Time
	var bounds []time.Time // the next partition after each heal (zero: none)
	for _, ev := range out.Events {
		switch ev.Action {
		case platform.FaultHeal:
			heals = append(heals, out.T0.Add(ev.At))
			bounds = append(bounds, time.Time{})
		case platform.FaultPartition:
			if n := len(bounds); n > 0 && bounds[n-1].IsZero() {
				bounds[n-1] = out.T0.Add(ev.At)
			}
		}
	}
	if len(heals) == 0 {
		return nil
	}
	m := map[string]map[string]float64{}
	all := map[string]float64{}
	for _, in := range out.Instances {
		events, err := catchUps(filepath.Join(in.OutDir, eventsFile))
		if err != nil {
			continue
		}
		fields := map[string]float64{}
		for i, heal := range heals {
			first := map[string]time.Time{} // per peer: its first catch-up after the heal
			for _, c := range events {
				if c.ReconnectAt.Before(heal) || (!bounds[i].IsZero() && !c.ReconnectAt.Before(bounds[i])) {
					continue
				}
				if t, ok := first[c.Peer]; !ok || c.CaughtUpAt.Before(t) {
					first[c.Peer] = c.CaughtUpAt
				}
			}
			if len(first) == 0 {
				continue
			}
			var latest time.Time
			for _, t := range first {
				if t.After(latest) {
					latest = t
				}
			}
			key := fmt.Sprintf("heal%d", i+1)
			fields[key] = latest.Sub(heal).Seconds()
			all[key] = max(all[key], fields[key])
		}
		if len(fields) > 0 {
			m["kv/"+in.Name+"/caught_up_after_heal_s"] = fields
		}
	}
	if len(all) > 0 {
		m["kv/all/converged_after_heal_s"] = all
	}
	return m
}

// catchUps reads the caught_up events of a member's events file.
func catchUps(path string) ([]server.Event, error) {
	var out []server.Event
	err := readEvents(path, func(e server.Event) {
		if e.Event == server.EventCaughtUp && e.Peer != "" && !e.ReconnectAt.IsZero() && !e.CaughtUpAt.IsZero() {
			out = append(out, e)
		}
	})
	return out, err
}

// readEvents calls fn for each event of a member's events file. A torn line (the member was
// killed mid-write) is skipped.
func readEvents(path string, fn func(server.Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e server.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		fn(e)
	}
	return sc.Err()
}
