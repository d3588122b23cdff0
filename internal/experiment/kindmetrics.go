package experiment

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/results"
)

// kindMetrics collects the metrics the run's kinds report (Kind.Metrics), components and
// workloads alike, from what their instances wrote into their output directories.
func kindMetrics(rec runRecord) map[string]map[string]float64 {
	if rec.T0.IsZero() {
		return nil // the run never started its clock
	}
	events := firedEvents(filepath.Join(rec.dir, results.EventsFile))
	byKind := map[string][]kind.InstanceOutput{}
	var order []string
	for _, inst := range rec.instances {
		k, ok := kind.Lookup(inst.Kind)
		if !ok || k.Metrics == nil {
			continue
		}
		if _, seen := byKind[inst.Kind]; !seen {
			order = append(order, inst.Kind)
		}
		byKind[inst.Kind] = append(byKind[inst.Kind], kind.InstanceOutput{Name: inst.Name, Node: inst.Node, Config: inst.DecodedConfig,
			Log:    platform.LogPath(filepath.Join(rec.dir, results.LogsDir), inst.Node, inst.Name, "stderr"),
			OutDir: instanceDir(rec.dir, inst)})
	}
	m := map[string]map[string]float64{}
	for _, name := range order {
		k, _ := kind.Lookup(name)
		for metric, fields := range k.Metrics(kind.RunOutput{T0: rec.T0, Events: events, Instances: byKind[name],
			Samples: filepath.Join(rec.dir, results.SamplesFile)}) {
			m[metric] = fields
		}
	}
	return m
}

// firedEvents reads events.csv (t_s, action, target, detail, status) and keeps the events whose
// status is ok; a missing or unreadable file is no events.
func firedEvents(path string) []kind.FiredEvent {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	var out []kind.FiredEvent
	for _, r := range rows[1:] {
		if len(r) < 5 || r[4] != "ok" {
			continue
		}
		t, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			continue
		}
		out = append(out, kind.FiredEvent{At: time.Duration(t * float64(time.Second)), Action: r[1], Target: r[2]})
	}
	return out
}
