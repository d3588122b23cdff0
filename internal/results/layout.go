package results

import "path/filepath"

// Schema is the version of the layout and documents below; summary.json records it.
const Schema = 1

// Files and folders of a results directory (docs/results-format.md):
//
//	<out>/<scenario>-<stamp>/  ScenarioFile EnvironmentFile SummaryFile RunsDir/
//	  runs/<id>/              RunFile EventsFile SamplesFile NetworkFile LinksFile WorkloadsDir/ ComponentsDir/ LogsDir/
//	    workloads/<name>/     StatsFile TimeseriesFile PercentilesFile LatencyLogFile ErrorsFile InstancesFile
const (
	ScenarioFile    = "scenario.yaml"
	EnvironmentFile = "environment.json"
	SummaryFile     = "summary.json"
	RunsDir         = "runs"

	RunFile     = "run.json"
	EventsFile  = "events.csv"
	SamplesFile = "samples.csv"
	// NetworkFile and LinksFile are the emulated network's own figures, per sampling interval
	// and per link direction; only platforms that emulate the network write them (the testbed).
	NetworkFile   = "network.csv"
	LinksFile     = "links.csv"
	WorkloadsDir  = "workloads"
	ComponentsDir = "components"
	LogsDir       = "logs"

	StatsFile       = "stats.json"
	TimeseriesFile  = "timeseries.csv"
	PercentilesFile = "percentiles.csv"
	LatencyLogFile  = "latency.hlog"
	ErrorsFile      = "errors.csv"
	// InstancesFile exists only for workloads whose answers name the instance that served them.
	InstancesFile = "instances.csv"
)

// LoadFiles are the files the load engine (package loadgen) writes into a workload's folder,
// the request series the report charts: what a workload writes unless its kind says otherwise
// (Instance.Outputs).
var LoadFiles = []string{StatsFile, TimeseriesFile, PercentilesFile, ErrorsFile}

// RunDir is runs/<id>/ of the results directory dir.
func RunDir(dir, id string) string { return filepath.Join(dir, RunsDir, id) }

// WorkloadDir is workloads/<name>/ of a run directory.
func WorkloadDir(runDir, name string) string { return filepath.Join(runDir, WorkloadsDir, name) }

// ComponentDir is components/<name>/ of a run directory: a component's own output (metrics,
// events files), as opposed to its logs.
func ComponentDir(runDir, name string) string { return filepath.Join(runDir, ComponentsDir, name) }
