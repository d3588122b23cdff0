package experiment

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// kindMetrics collects the metrics the run's component kinds report (Kind.Metrics).
func kindMetrics(rec runRecord) map[string]map[string]float64 {
	if rec.T0.IsZero() {
		return nil // the run never started its clock
	}
	events := firedEvents(filepath.Join(rec.dir, "events.csv"))
	byKind := map[string][]InstanceOutput{}
	var order []string
	for _, c := range rec.components {
		k, ok := LookupKind(c.Kind)
		if !ok || k.Metrics == nil {
			continue
		}
		if _, seen := byKind[c.Kind]; !seen {
			order = append(order, c.Kind)
		}
		byKind[c.Kind] = append(byKind[c.Kind], InstanceOutput{Name: c.Name, Node: c.Node, Config: c.DecodedConfig,
			Log:    filepath.Join(rec.dir, "logs", c.Node+"."+c.Name+".stderr.log"),
			OutDir: filepath.Join(rec.dir, "components", c.Name)})
	}
	m := map[string]map[string]float64{}
	for _, kind := range order {
		k, _ := LookupKind(kind)
		for metric, fields := range k.Metrics(RunOutput{T0: rec.T0, Events: events, Instances: byKind[kind]}) {
			m[metric] = fields
		}
	}
	return m
}

// firedEvents reads events.csv (t_s, action, target, detail, status) and keeps the events whose
// status is ok; a missing or unreadable file is no events.
func firedEvents(path string) []FiredEvent {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	var out []FiredEvent
	for _, r := range rows[1:] {
		if len(r) < 5 || r[4] != "ok" {
			continue
		}
		t, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			continue
		}
		out = append(out, FiredEvent{At: time.Duration(t * float64(time.Second)), Action: r[1], Target: r[2]})
	}
	return out
}
