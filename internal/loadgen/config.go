package loadgen

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"
)

// Config says how Run drives its series. Exactly one of Rate (open loop) and Clients (closed
// loop) is set; both apply per series.
type Config struct {
	// Rate is the open-loop arrival rate per series in requests/s.
	Rate float64
	// Clients is the number of closed-loop clients per series.
	Clients int
	// ThinkTime is how long a closed-loop client waits between an answer and its next request.
	ThinkTime time.Duration
	// Duration of the run, warm-up included.
	Duration time.Duration
	// Warmup is the leading part of Duration excluded from the final statistics.
	Warmup time.Duration
	// Timeout bounds each request, measured from its intended send time; it also bounds how
	// long Run waits for requests in flight when it stops.
	Timeout time.Duration
	// MaxInflight caps outstanding open-loop requests per series (default 10000).
	MaxInflight int
	// QoSLatency, if > 0, is a service's response-time requirement: stats.json reports per
	// series the share of requests that succeeded within it (errors count as misses) and
	// timeseries.csv the count per second.
	QoSLatency time.Duration
	// LatencyBounds, with QoSLatency, are response-time bounds (ascending) under which
	// stats.json counts each series' successes ("qos" "below"), for the response-time ranges
	// a report section draws; the engine gives them no meaning.
	LatencyBounds []time.Duration
	// OutDir receives stats.json, timeseries.csv, percentiles.csv, latency.hlog and errors.csv;
	// empty means no files.
	OutDir string
	// Progress receives the JSON progress lines (see the package doc); nil means none.
	Progress io.Writer
	// ProgressInterval is the period of progress lines and of closing timeseries intervals.
	ProgressInterval time.Duration
	// CountSeries names the series whose counts make a progress line's top-level sent, ok and
	// errors and decide whether anything got through (StatusFailed); empty means all series.
	// A workload whose one request yields several series (IoT: t_ex and t_rr per batch)
	// names one of them, so that its requests are not counted twice.
	CountSeries []string
}

// DefaultConfig returns a 30 s open-loop run at 100 requests/s per series with a 1 s timeout.
func DefaultConfig() Config {
	return Config{
		Rate:             100,
		Duration:         30 * time.Second,
		Timeout:          time.Second,
		MaxInflight:      10000,
		ProgressInterval: time.Second,
	}
}

// maxLatency is the highest latency the histograms track; slower requests are recorded as this.
const maxLatency = 60 * time.Second

// Validate checks the config; errors name the field and what is allowed.
func (c Config) Validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("rate %v: must be >= 0", c.Rate)
	case c.Clients < 0:
		return fmt.Errorf("clients %d: must be >= 0", c.Clients)
	case (c.Rate > 0) == (c.Clients > 0):
		return errors.New("exactly one of rate (open loop) and clients (closed loop) must be > 0")
	case c.Rate > 1e6:
		return fmt.Errorf("rate %v: at most 1000000 requests/s per series", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("duration %v: must be > 0", c.Duration)
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("warmup %v: must be >= 0 and shorter than duration %v", c.Warmup, c.Duration)
	case c.Timeout <= 0 || c.Timeout > maxLatency:
		return fmt.Errorf("timeout %v: must be > 0 and <= %v", c.Timeout, maxLatency)
	case c.MaxInflight < 0:
		return fmt.Errorf("max_inflight %d: must be >= 0 (0 means the default 10000)", c.MaxInflight)
	case c.QoSLatency < 0 || c.QoSLatency > maxLatency:
		return fmt.Errorf("qos_latency %v: must be between 0 (none) and %v", c.QoSLatency, maxLatency)
	case len(c.LatencyBounds) > 0 && c.QoSLatency == 0:
		return fmt.Errorf("latency bounds %v: need a QoS latency", c.LatencyBounds)
	case len(c.LatencyBounds) > 16:
		return fmt.Errorf("%d latency bounds: at most 16", len(c.LatencyBounds))
	case c.ThinkTime < 0:
		return fmt.Errorf("think_time %v: must be >= 0", c.ThinkTime)
	case !ascending(c.LatencyBounds, maxLatency):
		return fmt.Errorf("latency bounds %v: want ascending durations > 0 and <= %v", c.LatencyBounds, maxLatency)
	case c.ProgressInterval < 0:
		return fmt.Errorf("progress_interval %v: must be >= 0", c.ProgressInterval)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxInflight == 0 {
		c.MaxInflight = 10000
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = time.Second
	}
	return c
}

var seriesNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// CheckSeriesName reports whether name can name a series.
func CheckSeriesName(name string) error {
	if !seriesNameRE.MatchString(name) {
		return fmt.Errorf("series name %q: use letters, digits, '_', '.' or '-'", name)
	}
	return nil
}

// ValidateSeries checks that names are non-empty, unique and usable as log tags.
func ValidateSeries(series []Series) error {
	if len(series) == 0 {
		return errors.New("no series: at least one target is required")
	}
	seen := map[string]bool{}
	for i, s := range series {
		if err := CheckSeriesName(s.Name); err != nil {
			return fmt.Errorf("series %d: %w", i, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("series name %q: used twice", s.Name)
		}
		seen[s.Name] = true
		if s.Target == nil {
			return fmt.Errorf("series %q: no target", s.Name)
		}
	}
	return validateOutputs(series)
}

// ascending reports whether bounds are strictly increasing, each in (0, limit].
func ascending(bounds []time.Duration, limit time.Duration) bool {
	for i, b := range bounds {
		if b <= 0 || b > limit || i > 0 && b <= bounds[i-1] {
			return false
		}
	}
	return true
}
