package loadgen

import (
	"context"
	"math"
	"sort"
	"strconv"

	"github.com/continuum-project/continuum/internal/results"
)

// InstanceTarget is a Target behind a load balancer or proxy that can tell which backend
// instance served each request (for HTTP, a response header such as X-Continuum-Instance).
// Run then counts every series' requests per instance: per second in instances.csv and after
// the warm-up in stats.json, so results show how a balancer spread the load over time.
type InstanceTarget interface {
	Target
	// DoInstance is Do that also returns the serving instance; "" when the answer named none
	// (no answer at all, or an error from the balancer itself).
	DoInstance(ctx context.Context) (instance string, err error)
}

// instCount accumulates one instance's requests (in one second, or overall).
type instCount struct {
	n, ok, errs int64
	latSum      float64 // ms, successes only
}

func (c *instCount) add(latencyMS float64, failed bool) {
	c.n++
	if failed {
		c.errs++
		return
	}
	c.ok++
	c.latSum += latencyMS
}

func (c *instCount) mean() float64 {
	if c.ok == 0 {
		return 0
	}
	return math.Round(c.latSum/float64(c.ok)*1000) / 1000
}

// instancesCSV has a row per second, series and instance that had requests (requests attributed
// to the second of their intended time, like timeseries.csv). ok is false when no request of
// any series named its instance: the file is then not written.
func instancesCSV(recs []*recorder) (data []byte, ok bool, err error) {
	secs := 0
	for _, r := range recs {
		secs = max(secs, len(r.rows))
		ok = ok || r.anyInst
	}
	if !ok {
		return nil, false, nil
	}
	var rows [][]string
	for sec := range secs {
		for _, r := range recs {
			if sec >= len(r.rows) {
				continue
			}
			rw := r.rows[sec]
			for _, name := range sortedInstances(rw.inst) {
				c := rw.inst[name]
				rows = append(rows, []string{strconv.Itoa(rw.sec), r.name, name, fmtInt(c.n), fmtInt(c.ok),
					fmtInt(c.errs), fmtFloat(c.mean())})
			}
		}
	}
	data, err = writeCSV(results.InstancesHeader, rows)
	return data, true, err
}

func sortedInstances(m map[string]*instCount) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// instanceStats turns the after-warm-up counts into stats.json's instances; nil when no
// request named an instance (a target that can tell, but whose answers never did).
func instanceStats(m map[string]*instCount, any bool) map[string]results.InstanceStats {
	if len(m) == 0 || !any {
		return nil
	}
	var total int64
	for _, c := range m {
		total += c.n
	}
	out := make(map[string]results.InstanceStats, len(m))
	for name, c := range m {
		out[name] = results.InstanceStats{Requests: c.n, OK: c.ok, Errors: c.errs, MeanMS: c.mean(),
			Share: math.Round(float64(c.n)/float64(total)*1e6) / 1e6}
	}
	return out
}
