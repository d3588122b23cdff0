package results

import "strings"

// ColumnType is what a CSV column's cells hold, as every reader parses them: Go's here, and the
// Python package continuum_results, whose dtype tables are generated from Tables
// (internal/results/pyschema, `make results-schema`).
type ColumnType int

const (
	Float       ColumnType = iota // a number; seconds, milliseconds, ratios
	Int                           // a whole number: counts, bytes
	Text                          // names, reasons; empty when absent
	OptionalInt                   // a whole number, or empty where it does not apply
)

func (t ColumnType) String() string {
	switch t {
	case Float:
		return "float"
	case Int:
		return "int"
	case Text:
		return "text"
	case OptionalInt:
		return "optional int"
	}
	return "unknown"
}

// Column is one column of a results CSV file.
type Column struct {
	Name string
	Type ColumnType
}

// Table is a results CSV file and its columns, in order. Readers look columns up by name, so a
// column may be added at the end without breaking them; renaming or removing one, or changing
// its type, is a schema change.
type Table struct {
	File    string
	Columns []Column
}

// Header is the table's header row.
func (t Table) Header() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// Name is the table's name: its file's without the extension ("samples").
func (t Table) Name() string { return strings.TrimSuffix(t.File, ".csv") }

// The CSV tables of a results directory (docs/results-format.md).
var (
	EventsTable = Table{EventsFile, []Column{
		{"t_s", Float}, {"action", Text}, {"target", Text}, {"detail", Text}, {"status", Text}}}
	SamplesTable = Table{SamplesFile, []Column{
		{"t_s", Float}, {"node", Text}, {"component", Text}, {"cpu_seconds", Float}, {"cpu_util", Float},
		{"rss_bytes", Int}, {"disk_bytes", Int}, {"rx_bytes", Int}, {"tx_bytes", Int}, {"power_w", Float},
		{"energy_j", Float}, {"idle_energy_j", Float}, {"rx_packets", Int}, {"tx_packets", Int}}}
	NetworkTable = Table{NetworkFile, []Column{
		{"t_s", Float}, {"interval_s", Float}, {"packets", Int}, {"bytes", Int}, {"cpu_cores", Float},
		{"delivered", Int}, {"late_p50_us", Float}, {"late_p99_us", Float}, {"late_max_us", Float},
		{"read_lag_p99_us", Float}, {"drops", Int}, {"unexplained_drops", Int}, {"drops_by_reason", Text},
		{"nodes_cpu_cores", Float}}}
	LinksTable = Table{LinksFile, []Column{
		{"from", Text}, {"to", Text}, {"packets", Int}, {"bytes", Int}, {"delivered", Int},
		{"late_p50_us", Float}, {"late_p99_us", Float}, {"late_max_us", Float}, {"drops", Int},
		{"drops_by_reason", Text}}}
	TimeseriesTable = Table{TimeseriesFile, []Column{
		{"t_s", Float}, {"series", Text}, {"sent", Int}, {"ok", Int}, {"errors", Int},
		{"throughput_rps", Float}, {"p50_ms", Float}, {"p99_ms", Float}, {"max_ms", Float},
		{"within_qos", OptionalInt}}} // empty without a QoS limit
	PercentilesTable = Table{PercentilesFile, []Column{
		{"series", Text}, {"percentile", Float}, {"latency_ms", Float}, {"count", Int}}}
	ErrorsTable = Table{ErrorsFile, []Column{
		{"series", Text}, {"type", Text}, {"count", Int}}}
	// InstancesTable exists only for workloads whose answers name the instance that served them.
	InstancesTable = Table{InstancesFile, []Column{
		{"t_s", Float}, {"series", Text}, {"instance", Text}, {"requests", Int}, {"ok", Int}, {"errors", Int},
		{"mean_ms", Float}}}
)

// Tables lists every table: the run's (events, samples, network, links), then each workload's.
var Tables = []Table{EventsTable, SamplesTable, NetworkTable, LinksTable,
	TimeseriesTable, PercentilesTable, ErrorsTable, InstancesTable}

// CSV headers, in column order (the tables' headers).
var (
	EventsHeader      = EventsTable.Header()
	SamplesHeader     = SamplesTable.Header()
	NetworkHeader     = NetworkTable.Header()
	LinksHeader       = LinksTable.Header()
	TimeseriesHeader  = TimeseriesTable.Header()
	PercentilesHeader = PercentilesTable.Header()
	ErrorsHeader      = ErrorsTable.Header()
	InstancesHeader   = InstancesTable.Header()
)
