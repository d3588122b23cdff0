package kubebench

import (
	"strconv"
	"strings"

	"github.com/continuum-project/continuum/internal/benchkit"
)

// Operations measured through client-go, in report order. Watch is the delivery of a create's
// ADDED event to a watch opened before the creates, timed from the create's request.
const (
	OpCreate = "create"
	OpGet    = "get"
	OpUpdate = "update"
	OpList   = "list"
	OpDelete = "delete"
	OpWatch  = "watch"
)

// Ops lists the operations in report order.
var Ops = []string{OpCreate, OpGet, OpUpdate, OpList, OpDelete, OpWatch}

// Result is one `continuum bench kube-store` run.
type Result struct {
	benchkit.Header
	Config Config `json:"config"`
	// Runs is every store's measurement, in the order taken (stores interleaved per repeat).
	Runs []StoreRun `json:"runs"`
	// Races is every race setting's measurement, in the order taken.
	Races []RaceRun `json:"races,omitempty"`
}

// OpLatency is one operation's latencies in one run (ms).
type OpLatency struct {
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
	// Error is the first error seen, if any.
	Error string `json:"error,omitempty"`
}

// latencyOf summarizes samples (ms) and an error count.
func latencyOf(samples []float64, errs int, first error) OpLatency {
	l := OpLatency{N: len(samples), Errors: errs,
		P50: benchkit.Round(benchkit.NearestRank(samples, 0.5), 3),
		P99: benchkit.Round(benchkit.NearestRank(samples, 0.99), 3)}
	for _, s := range samples {
		l.Max = max(l.Max, benchkit.Round(s, 3))
	}
	if first != nil {
		l.Error = benchkit.OneLine(first.Error(), 200)
	}
	return l
}

// StoreRun is one store measured once: a fresh store and apiserver.
type StoreRun struct {
	Store  string `json:"store"`
	Repeat int    `json:"repeat"`
	// StoreVersion is what the store's Status reports; APIServerVersion kube-apiserver's
	// /version.
	StoreVersion     string `json:"store_version,omitempty"`
	APIServerVersion string `json:"apiserver_version,omitempty"`
	// APIServerStartS is the time from starting kube-apiserver to its first /readyz 200.
	APIServerStartS float64              `json:"apiserver_start_s"`
	Ops             map[string]OpLatency `json:"ops"`
	// Footprint after the creates, gets, updates and lists (all Objects present).
	StoreRSS     int64 `json:"store_rss_bytes"`
	StoreDisk    int64 `json:"store_disk_bytes"`
	APIServerRSS int64 `json:"apiserver_rss_bytes"`
	// Restarts are the store's kill -9 and restart, one per Config.RestartDowns.
	Restarts []Restart `json:"restarts,omitempty"`
	// Error ends the run early (the figures before it stand).
	Error string `json:"error,omitempty"`
}

// Restart is what a kill -9 of the store under the running apiserver costs. Times are seconds
// from the restart (DownS after the kill).
type Restart struct {
	DownS float64 `json:"down_s"`
	// StoreReadyS: the store answers its Status again (restarted on the same data directory).
	StoreReadyS float64 `json:"store_ready_s"`
	// ReadyzS: the apiserver's /readyz answers 200 after the store is back (0: never, see Error).
	ReadyzS float64 `json:"readyz_s"`
	// CreateS: a ConfigMap create succeeds (tried every 100 ms once the store is back).
	CreateS float64 `json:"create_s"`
	// ReadyzFailed says /readyz answered other than 200 at least once after the kill; Checks
	// are the distinct failing checks it named.
	ReadyzFailed bool     `json:"readyz_failed"`
	Checks       []string `json:"failing_checks,omitempty"`
	// Log is the apiserver's warning and error lines from the kill to /readyz 200, distinct by
	// message, with how often each came.
	Log   []string `json:"apiserver_log,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Race settings: where the two apiservers' stores are.
const (
	RaceKVTwoMembers = "kv, apiservers on different members"
	RaceKVOneMember  = "kv, both apiservers on one member"
	RaceEtcd         = "etcd, both apiservers"
)

// RaceSettings lists the settings in report order.
var RaceSettings = []string{RaceKVTwoMembers, RaceKVOneMember, RaceEtcd}

// RaceRun is one race setting measured once.
type RaceRun struct {
	Setting string `json:"setting"`
	Repeat  int    `json:"repeat"`
	// Successes are Updates that returned 200; Conflicts those that returned 409 (and were
	// retried); OtherErrors anything else.
	Successes   int64 `json:"successes"`
	Conflicts   int64 `json:"conflicts"`
	OtherErrors int64 `json:"other_errors"`
	// Final is the counter once both apiservers read the same value; Lost = Successes - Final
	// (acknowledged increments that are not in the counter).
	Final int64 `json:"final"`
	Lost  int64 `json:"lost"`
	// Agreed says both apiservers read the same final value (kv members converge by replication).
	Agreed    bool    `json:"agreed"`
	DurationS float64 `json:"duration_s"`
	Error     string  `json:"error,omitempty"`
}

// storeRuns are the runs of one store without an early error in the figure f reads, in order.
func (r *Result) storeRuns(store string) []StoreRun {
	var out []StoreRun
	for _, s := range r.Runs {
		if s.Store == store {
			out = append(out, s)
		}
	}
	return out
}

// OpSpread is an operation's p50 (q = 0.5) or p99 (q = 0.99) over a store's repeats.
func (r *Result) OpSpread(store, op string, q float64) benchkit.Spread {
	return benchkit.Summarize(benchkit.Values(r.storeRuns(store), func(s StoreRun) (float64, bool) {
		l, ok := s.Ops[op]
		if !ok || l.N == 0 {
			return 0, false
		}
		if q >= 0.99 {
			return l.P99, true
		}
		return l.P50, true
	}))
}

// Figure is one of a store run's scalar figures, by name: "store_rss", "store_disk",
// "apiserver_rss" (bytes), "apiserver_start", "restart_store", "restart_readyz", "restart_create"
// (seconds; of the restart after the i-th of Config.RestartDowns, "restart_readyz@1"; no index:
// the first). ok is false when the run has no such figure.
func (s StoreRun) Figure(name string) (float64, bool) {
	var rs *Restart
	name, idx, _ := strings.Cut(name, "@")
	if i, err := strconv.Atoi(idx); err == nil || idx == "" {
		if i >= 0 && i < len(s.Restarts) && s.Restarts[i].Error == "" {
			rs = &s.Restarts[i]
		}
	}
	switch name {
	case "store_rss":
		return float64(s.StoreRSS), s.StoreRSS > 0
	case "store_disk":
		return float64(s.StoreDisk), s.StoreDisk > 0
	case "apiserver_rss":
		return float64(s.APIServerRSS), s.APIServerRSS > 0
	case "apiserver_start":
		return s.APIServerStartS, s.APIServerStartS > 0
	case "restart_store":
		return orZero(rs != nil, func() float64 { return rs.StoreReadyS })
	case "restart_readyz":
		return orZero(rs != nil && rs.ReadyzS > 0, func() float64 { return rs.ReadyzS })
	case "restart_create":
		return orZero(rs != nil && rs.CreateS > 0, func() float64 { return rs.CreateS })
	}
	return 0, false
}

func orZero(ok bool, f func() float64) (float64, bool) {
	if !ok {
		return 0, false
	}
	return f(), true
}

// FigureSpread is a figure (StoreRun.Figure) over a store's repeats.
func (r *Result) FigureSpread(store, name string) benchkit.Spread {
	return benchkit.Summarize(benchkit.Values(r.storeRuns(store), func(s StoreRun) (float64, bool) { return s.Figure(name) }))
}

// Ratio is kv's figure over etcd's, repeat by repeat (the two measured in the same repeat, one
// after the other), summarized over the repeats; f reads a run's figure.
func (r *Result) Ratio(f func(StoreRun) (float64, bool)) benchkit.Spread {
	etcd := map[int]StoreRun{}
	for _, s := range r.storeRuns(StoreEtcd) {
		etcd[s.Repeat] = s
	}
	var ratios []float64
	for _, k := range r.storeRuns(StoreKV) {
		e, ok := etcd[k.Repeat]
		if !ok {
			continue
		}
		kv, ok1 := f(k)
		ev, ok2 := f(e)
		if ok1 && ok2 && ev > 0 {
			ratios = append(ratios, kv/ev)
		}
	}
	return benchkit.Summarize(ratios)
}

// OpFigure reads an operation's p50 or p99 from a run, for Ratio.
func OpFigure(op string, q float64) func(StoreRun) (float64, bool) {
	return func(s StoreRun) (float64, bool) {
		l, ok := s.Ops[op]
		if !ok || l.N == 0 {
			return 0, false
		}
		if q >= 0.99 {
			return l.P99, true
		}
		return l.P50, true
	}
}

// RaceTotals sums a setting's races over the repeats, and lists the lost updates per repeat.
func (r *Result) RaceTotals(setting string) (total RaceRun, lostPerRepeat []int64) {
	total.Setting = setting
	total.Agreed = true
	for _, x := range r.Races {
		if x.Setting != setting || x.Error != "" {
			continue
		}
		total.Repeat++
		total.Successes += x.Successes
		total.Conflicts += x.Conflicts
		total.OtherErrors += x.OtherErrors
		total.Final += x.Final
		total.Lost += x.Lost
		total.Agreed = total.Agreed && x.Agreed
		lostPerRepeat = append(lostPerRepeat, x.Lost)
	}
	return total, lostPerRepeat
}
