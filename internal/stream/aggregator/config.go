package aggregator

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/stream/bridge"
	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// Config is the aggregator's configuration.
type Config struct {
	Brokers []string // Kafka bootstrap servers, host:port (required)
	Topics  []string // topics to consume (required)
	// Group is the consumer group (default "continuum-aggregator"); InstanceID, when set, makes
	// the member static, so a restarted aggregator takes its partitions back at once instead of
	// after SessionTimeout.
	Group          string
	InstanceID     string
	SessionTimeout time.Duration // default 10 s (Kafka's lower bound is 6 s)
	// RebalanceTimeout is how long the group waits, in a rebalance, for this member to rejoin
	// (default 60 s). A member still writing a poll's records when it passes loses its
	// partitions (the package doc's window).
	RebalanceTimeout time.Duration
	// RTDB is the realtime database's base URL, http://host:port (required); Namespace its
	// ?ns= (empty: the server's default).
	RTDB      string
	Namespace string
	// Path is where records land (default "/records"); DeadLetterPath where poison records do
	// (default "/dead-letters"). Neither may contain the other.
	Path           string
	DeadLetterPath string
	KeyField       string // default "id"
	// MaxLeaves bounds the keys one PATCH sets (default 120: the database's kv transaction holds
	// 128 operations, and a write also deletes the ancestors' keys of what it writes).
	MaxLeaves int
	// PollRecords bounds the records taken per poll (default 2000); Parallel the PATCHes of one
	// poll in flight at once (default 4).
	PollRecords int
	Parallel    int
	// WriteTimeout bounds one PATCH (default 10 s); RetryMin and RetryMax the back-off between
	// attempts of a failed one (default 50 ms doubling to 5 s, with jitter).
	WriteTimeout time.Duration
	// StartTimeout bounds the check at start that a Kafka broker and the database answer
	// (default 10 s): a misspelt address is an error at once, not a consumer that waits
	// forever. Once running, outages of either are retried.
	StartTimeout time.Duration
	RetryMin     time.Duration
	RetryMax     time.Duration
	// StatsFile, when set, receives the counters (Stats as JSON) every second and at exit,
	// replaced atomically, for whoever measures the aggregator (its kind's Metrics).
	StatsFile string
	Logger    *slog.Logger // default slog.Default()
}

// DefaultConfig is a group "continuum-aggregator" writing to /records of the default database.
func DefaultConfig() Config {
	return Config{
		Group: "continuum-aggregator", SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, RTDB: "http://127.0.0.1:9000",
		Path: "/records", DeadLetterPath: "/dead-letters", KeyField: "id", MaxLeaves: 120,
		PollRecords: 2000, Parallel: 4, WriteTimeout: 10 * time.Second, StartTimeout: 10 * time.Second,
		RetryMin: 50 * time.Millisecond, RetryMax: 5 * time.Second,
	}
}

// Validate checks the configuration; every problem is named with what is allowed.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: at least one Kafka bootstrap server (host:port) is required"))
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("brokers: %q: want host:port", b))
		}
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("topics: at least one topic is required"))
	}
	for _, t := range c.Topics {
		if err := bridge.ValidTopic(t); err != nil {
			errs = append(errs, fmt.Errorf("topics: %w", err))
		}
	}
	if c.Group == "" {
		errs = append(errs, errors.New("group: must not be empty"))
	}
	if c.SessionTimeout < 6*time.Second {
		errs = append(errs, fmt.Errorf("session timeout %v: must be >= 6s (the broker's group.min.session.timeout.ms)", c.SessionTimeout))
	}
	if c.RebalanceTimeout < time.Second {
		errs = append(errs, fmt.Errorf("rebalance timeout %v: must be >= 1s", c.RebalanceTimeout))
	}
	if u, err := url.Parse(c.RTDB); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("rtdb %q: want the realtime database's base URL, http://host:port", c.RTDB))
	}
	if c.Namespace != "" && strings.Trim(c.Namespace, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		errs = append(errs, fmt.Errorf("ns %q: lowercase letters, digits and '-' only", c.Namespace))
	}
	p, perr := tree.ParsePath(c.Path)
	d, derr := tree.ParsePath(c.DeadLetterPath)
	switch {
	case perr != nil:
		errs = append(errs, fmt.Errorf("path %q: %v", c.Path, perr))
	case derr != nil:
		errs = append(errs, fmt.Errorf("dead-letter path %q: %v", c.DeadLetterPath, derr))
	case len(p) == 0 || len(d) == 0:
		errs = append(errs, errors.New("path and dead-letter path must not be the root"))
	case hasPrefix(p, d) || hasPrefix(d, p):
		errs = append(errs, fmt.Errorf("path %q and dead-letter path %q: neither may contain the other", c.Path, c.DeadLetterPath))
	}
	if c.KeyField == "" {
		errs = append(errs, errors.New("key field: must not be empty"))
	}
	if c.MaxLeaves < 8 {
		errs = append(errs, fmt.Errorf("max leaves %d: must be >= 8 (a dead-letter entry has 6)", c.MaxLeaves))
	}
	if c.PollRecords < 1 || c.Parallel < 1 {
		errs = append(errs, fmt.Errorf("poll records %d and parallel %d: must be >= 1", c.PollRecords, c.Parallel))
	}
	if c.WriteTimeout <= 0 || c.RetryMin <= 0 || c.RetryMax < c.RetryMin {
		errs = append(errs, fmt.Errorf("write timeout %v, retry %v..%v: must be > 0, min <= max", c.WriteTimeout, c.RetryMin, c.RetryMax))
	}
	return errors.Join(errs...)
}

func hasPrefix(p, pre []string) bool {
	if len(pre) > len(p) {
		return false
	}
	for i := range pre {
		if p[i] != pre[i] {
			return false
		}
	}
	return true
}
