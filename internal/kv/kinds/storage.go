package kinds

import (
	"maps"
	"path/filepath"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/kv/server"
)

// metrics is the kv kind's Metrics: convergence after heals and each member's storage writes.
func metrics(out kind.RunOutput) map[string]map[string]float64 {
	m := convergence(out)
	s := storage(out)
	if m == nil {
		return s
	}
	maps.Copy(m, s)
	return m
}

// storage reports what each member's storage engine wrote over the run, from the line it
// writes to its events file as it shuts down: kv/<member>/storage with wal_mib, flushed_mib,
// compacted_mib, compactions and write_amp ((WAL + flushed + compacted) / WAL). A member
// that was killed, not stopped, wrote no such line and is left out.
func storage(out kind.RunOutput) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, in := range out.Instances {
		var last *server.StorageCounters
		_ = readEvents(filepath.Join(in.OutDir, eventsFile), func(e server.Event) {
			if e.Event == server.EventStorage && e.Storage != nil {
				last = e.Storage
			}
		})
		if last == nil {
			continue
		}
		const mib = 1 << 20
		m["kv/"+in.Name+"/storage"] = map[string]float64{
			"wal_mib":       float64(last.WALBytes) / mib,
			"flushed_mib":   float64(last.FlushedBytes) / mib,
			"compacted_mib": float64(last.CompactedBytes) / mib,
			"compactions":   float64(last.Compactions),
			"write_amp":     last.WriteAmp,
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
