package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/continuum-project/continuum/internal/results"
)

// Results is everything Load found in a results directory. Optional files that are absent leave
// their fields empty and add a line to Missing, so the report can say what it could not show.
type Results struct {
	Dir         string
	Summary     results.Summary
	Environment map[string]any // environment.json as written; nil when absent
	Runs        []*Run         // sorted by ID
	Missing     []string       // human-readable notes about absent optional files
}

// Run is runs/<id>/: its run.json plus the measurements it produced.
type Run struct {
	results.Run

	Events  []Event  `json:"-"`
	Samples []Sample `json:"-"`
	// Network and Links are network.csv and links.csv: the emulated network's own figures,
	// written only by platforms that emulate it (their absence is not missing data).
	Network   []results.NetworkRow `json:"-"`
	Links     []results.LinkRow    `json:"-"`
	Workloads []*Workload          `json:"-"` // sorted by name
	Missing   []string             `json:"-"` // absent optional files of this run
}

// Event is a row of events.csv.
type Event struct {
	T      float64
	Action string
	Target string
	Detail string
	Status string
}

// Label is how the event is named on charts: "partition cloud", "heal".
func (e Event) Label() string {
	if e.Target == "" {
		return e.Action
	}
	return e.Action + " " + e.Target
}

// Sample is a row of samples.csv. Component is empty for node rows.
type Sample = results.Sample

// Workload is runs/<id>/workloads/<name>/.
type Workload struct {
	Name        string
	Series      []string // in order of first appearance in the files
	Stats       map[string]results.SeriesStats
	Timeseries  []TimePoint
	Percentiles []PercentilePoint
	Errors      []ErrorCount
	// Requests says the workload's kind writes the load engine's request series
	// (results.LoadFiles): only then does the page draw its latency and throughput charts.
	Requests bool
	// Instances are the rows of instances.csv (requests per serving instance per second),
	// written only by workloads whose answers name their instance (behind a proxy).
	Instances []InstancePoint
}

// TimePoint is a row of timeseries.csv; latency fields are NaN when the second had no success.
type TimePoint struct {
	T             float64
	Series        string
	Sent, OK      float64
	Errors        float64
	ThroughputRPS float64
	P50, P99, Max float64
	WithinQoS     float64 // NaN when the workload had no QoS latency
}

// PercentilePoint is a row of percentiles.csv.
type PercentilePoint struct {
	Series     string
	Percentile float64
	LatencyMS  float64
	Count      float64
}

// ErrorCount is a row of errors.csv.
type ErrorCount struct {
	Series string
	Type   string
	Count  float64
}

// Load reads a results directory. summary.json is required unless runs/ exists (an interrupted
// runner may die before writing it); every other file is optional. Malformed files are errors
// naming file:line.
func Load(dir string) (*Results, error) {
	res := &Results{Dir: dir}
	sumPath := filepath.Join(dir, results.SummaryFile)
	runsDir := filepath.Join(dir, results.RunsDir)
	haveSummary := true
	if err := results.ReadJSON(sumPath, &res.Summary); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if _, serr := os.Stat(runsDir); serr != nil {
			return nil, fmt.Errorf("%s is not a results directory: %s not found (and no runs/ directory)", dir, sumPath)
		}
		haveSummary = false
		res.Missing = append(res.Missing, "summary.json is missing: the summary is built from each run's stats.json, without confidence intervals")
	}
	if err := results.ReadJSON(filepath.Join(dir, results.EnvironmentFile), &res.Environment); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		res.Missing = append(res.Missing, "environment.json is missing")
	}
	entries, err := os.ReadDir(runsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		run, err := loadRun(filepath.Join(runsDir, e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}
	sort.Slice(res.Runs, func(i, j int) bool { return res.Runs[i].ID < res.Runs[j].ID })
	if len(res.Runs) == 0 {
		res.Missing = append(res.Missing, "no runs/<id>/ directories: there are no per-run charts")
	}
	if !haveSummary {
		res.Summary = summaryFromRuns(res.Runs)
	}
	return res, nil
}

func loadRun(dir, id string) (*Run, error) {
	run := &Run{Run: results.Run{ID: id}}
	if err := results.ReadJSON(filepath.Join(dir, results.RunFile), &run.Run); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		run.Missing = append(run.Missing, results.RunFile)
	}
	if run.ID == "" {
		run.ID = id
	}
	optional := func(name string, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			run.Missing = append(run.Missing, name)
			return nil
		}
		return err
	}
	if err := optional(results.EventsFile, loadEvents(filepath.Join(dir, results.EventsFile), run)); err != nil {
		return nil, err
	}
	if err := optional(results.SamplesFile, loadSamples(filepath.Join(dir, results.SamplesFile), run)); err != nil {
		return nil, err
	}
	var err error
	if run.Network, err = results.ReadNetwork(filepath.Join(dir, results.NetworkFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if run.Links, err = results.ReadLinks(filepath.Join(dir, results.LinksFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	wdirs, err := os.ReadDir(filepath.Join(dir, results.WorkloadsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if len(wdirs) == 0 {
		run.Missing = append(run.Missing, "workloads/")
	}
	outputs := map[string][]string{}
	for _, in := range run.Instances {
		outputs[in.Name] = in.Outputs
	}
	for _, e := range wdirs {
		if !e.IsDir() {
			continue
		}
		w, missing, err := loadWorkload(results.WorkloadDir(dir, e.Name()), e.Name(), outputs[e.Name()])
		if err != nil {
			return nil, err
		}
		run.Workloads = append(run.Workloads, w)
		run.Missing = append(run.Missing, missing...)
	}
	return run, nil
}

func loadEvents(path string, run *Run) error {
	return results.ReadCSV(path, []string{"t_s", "action"}, func(r results.CSVRow) error {
		t, err := r.Float("t_s")
		if err != nil {
			return err
		}
		run.Events = append(run.Events, Event{T: t, Action: r.Str("action"), Target: r.Str("target"),
			Detail: r.Str("detail"), Status: r.Str("status")})
		return nil
	})
}

func loadSamples(path string, run *Run) error {
	samples, err := results.ReadSamples(path)
	run.Samples = append(run.Samples, samples...)
	return err
}

// loadWorkload reads one workload folder; it returns the names of absent files for the run's
// Missing list: the files its kind says it writes (outputs, as run.json records them; nil:
// results.LoadFiles, what every workload wrote before run.json said).
func loadWorkload(dir, name string, outputs []string) (*Workload, []string, error) {
	if outputs == nil {
		outputs = results.LoadFiles
	}
	w := &Workload{Name: name, Stats: map[string]results.SeriesStats{}, Requests: slices.ContainsFunc(outputs, isLoadFile)}
	var missing []string
	expected := map[string]bool{}
	for _, f := range outputs {
		expected[f] = true
		if isLoadFile(f) {
			continue // read below
		}
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, results.WorkloadsDir+"/"+name+"/"+f)
		}
	}
	seen := map[string]bool{}
	addSeries := func(s string) {
		if !seen[s] {
			seen[s] = true
			w.Series = append(w.Series, s)
		}
	}
	check := func(file string, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			if expected[file] {
				missing = append(missing, results.WorkloadsDir+"/"+name+"/"+file)
			}
			return nil
		}
		return err
	}
	var stats results.Stats
	if err := check(results.StatsFile, results.ReadJSON(filepath.Join(dir, results.StatsFile), &stats)); err != nil {
		return nil, nil, err
	}
	if stats.Series != nil {
		w.Stats = stats.Series
	}
	err := results.ReadCSV(filepath.Join(dir, results.TimeseriesFile), []string{"t_s", "series"}, func(r results.CSVRow) error {
		v, err := r.Floats("t_s", "sent", "ok", "errors", "throughput_rps", "p50_ms", "p99_ms", "max_ms", "within_qos")
		if err != nil {
			return err
		}
		s := r.Str("series")
		addSeries(s)
		w.Timeseries = append(w.Timeseries, TimePoint{T: v[0], Series: s, Sent: v[1], OK: v[2], Errors: v[3],
			ThroughputRPS: v[4], P50: v[5], P99: v[6], Max: v[7], WithinQoS: v[8]})
		return nil
	})
	if err := check(results.TimeseriesFile, err); err != nil {
		return nil, nil, err
	}
	err = results.ReadCSV(filepath.Join(dir, results.PercentilesFile), []string{"series", "percentile", "latency_ms"}, func(r results.CSVRow) error {
		v, err := r.Floats("percentile", "latency_ms", "count")
		if err != nil {
			return err
		}
		s := r.Str("series")
		addSeries(s)
		w.Percentiles = append(w.Percentiles, PercentilePoint{Series: s, Percentile: v[0], LatencyMS: v[1], Count: v[2]})
		return nil
	})
	if err := check(results.PercentilesFile, err); err != nil {
		return nil, nil, err
	}
	err = results.ReadCSV(filepath.Join(dir, results.ErrorsFile), []string{"series", "type", "count"}, func(r results.CSVRow) error {
		c, err := r.Float("count")
		if err != nil {
			return err
		}
		w.Errors = append(w.Errors, ErrorCount{Series: r.Str("series"), Type: r.Str("type"), Count: c})
		return nil
	})
	if err := check(results.ErrorsFile, err); err != nil {
		return nil, nil, err
	}
	// instances.csv exists only behind a proxy: its absence is not missing data.
	if err := loadInstances(filepath.Join(dir, results.InstancesFile), w); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	// Series only named in stats.json (no time series written) still belong in tables.
	names := make([]string, 0, len(w.Stats))
	for s := range w.Stats {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		addSeries(s)
	}
	return w, missing, nil
}

func isLoadFile(f string) bool { return slices.Contains(results.LoadFiles, f) }

// summaryFromRuns rebuilds summary.json's per-run metrics from stats.json when the runner did
// not write it; groups are left empty, so the report shows runs without confidence intervals.
func summaryFromRuns(runs []*Run) results.Summary {
	s := results.Summary{Schema: results.Schema}
	for _, r := range runs {
		sr := results.SummaryRun{ID: r.ID, Params: r.Params, Labels: r.Labels, Repeat: r.Repeat, Status: r.Status,
			Metrics: results.Metrics{}}
		for _, w := range r.Workloads {
			for name, st := range w.Stats {
				prefix := w.Name + "/" + name + "/"
				sr.Metrics[prefix+"latency_ms"] = st.Latency.Fields()
				sr.Metrics[prefix+"throughput_rps"] = map[string]float64{"value": st.ThroughputRPS}
				sr.Metrics[prefix+"errors"] = map[string]float64{"value": float64(st.Errors)}
			}
		}
		s.Runs = append(s.Runs, sr)
	}
	return s
}
