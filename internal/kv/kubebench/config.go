package kubebench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Stores measured: continuum kv (this binary's `kv` command) and etcd.
const (
	StoreKV   = "kv"
	StoreEtcd = "etcd"
)

// Config is `continuum bench kube-store`'s configuration.
type Config struct {
	// Stores to measure, in order (kv, etcd); a repeat measures each once, interleaved.
	Stores []string `json:"stores"`
	// Repeats is how many times every store (and every race setting) is measured from scratch.
	Repeats int `json:"repeats"`
	// Objects is how many ConfigMaps are created, read, updated, listed and deleted per run.
	Objects int `json:"objects"`
	// ValueBytes is the size of each ConfigMap's one data value.
	ValueBytes int `json:"value_bytes"`
	// Clients is the number of concurrent client-go callers (sharing one clientset, as the
	// goroutines of one controller do).
	Clients int `json:"clients"`
	// PageSize is the list limit; Lists is how many full paginated lists of the Objects run.
	PageSize int `json:"page_size"`
	Lists    int `json:"lists"`
	// RestartDowns are the store's kill -9 and restart under the running apiserver, one per
	// entry, each keeping the store down that long before restarting it (0: at once, as a
	// supervisor would; longer: long enough for the apiserver to notice). None: not measured.
	RestartDowns []time.Duration `json:"restart_downs"`
	// RestartTimeout bounds the wait for /readyz and a create after the store restarts.
	RestartTimeout time.Duration `json:"restart_timeout"`
	// Race runs section 4's measurement: RaceWriters goroutines per apiserver, two apiservers,
	// each goroutine making RaceIncrements successful read-modify-write increments of one
	// ConfigMap's counter. RaceMembers is the size of the kv cluster (2 or 3).
	Race           bool `json:"race"`
	RaceMembers    int  `json:"race_members"`
	RaceWriters    int  `json:"race_writers"`
	RaceIncrements int  `json:"race_increments"`
	// Binaries: empty finds them (etcd: baselines.EtcdBinary; kv: this executable; Kubernetes:
	// controlplane.FindBinDir).
	EtcdBin      string `json:"-"`
	ContinuumBin string `json:"-"`
	KubeBinDir   string `json:"-"`
	// Command is the command line that regenerates the result, for its header.
	Command string `json:"-"`
	// Dir holds the stores' data and the control planes' state (default: a temporary
	// directory, removed after).
	Dir string `json:"-"`
	// Log receives progress lines (nil: none).
	Log io.Writer `json:"-"`
}

// DefaultConfig is the documented run: 2000 ConfigMaps of 256 bytes, 8 clients, lists of 500,
// 3 repeats, restarts after 0, 5 and 20 s down (how long the store was down decides how long the
// apiserver takes to notice it is back), and the race (2 kv members, 4 writers per apiserver, 25
// increments each). quick shrinks it to a smoke run.
func DefaultConfig(quick bool) Config {
	c := Config{
		Stores: []string{StoreKV, StoreEtcd}, Repeats: 3,
		Objects: 2000, ValueBytes: 256, Clients: 8, PageSize: 500, Lists: 24,
		RestartDowns: []time.Duration{0, 5 * time.Second, 20 * time.Second}, RestartTimeout: 90 * time.Second,
		Race: true, RaceMembers: 2, RaceWriters: 4, RaceIncrements: 25,
	}
	if quick {
		c.Repeats, c.Objects, c.Lists, c.RaceIncrements = 1, 200, 8, 5
	}
	return c
}

// Validate reports the first invalid field and what is allowed.
func (c Config) Validate() error {
	if len(c.Stores) == 0 {
		return fmt.Errorf("stores: want at least one of kv, etcd")
	}
	seen := map[string]bool{}
	for _, s := range c.Stores {
		if s != StoreKV && s != StoreEtcd {
			return fmt.Errorf("store %q: want kv or etcd", s)
		}
		if seen[s] {
			return fmt.Errorf("store %q named twice", s)
		}
		seen[s] = true
	}
	switch {
	case c.Repeats < 1:
		return fmt.Errorf("repeats %d: want at least 1", c.Repeats)
	case c.Objects < 1:
		return fmt.Errorf("objects %d: want at least 1", c.Objects)
	case c.ValueBytes < 0 || c.ValueBytes > 512<<10:
		return fmt.Errorf("value bytes %d: want 0 to 524288", c.ValueBytes)
	case c.Clients < 1:
		return fmt.Errorf("clients %d: want at least 1", c.Clients)
	case c.PageSize < 1:
		return fmt.Errorf("page size %d: want at least 1", c.PageSize)
	case c.Lists < 0:
		return fmt.Errorf("lists %d: want 0 or more", c.Lists)
	case slices.ContainsFunc(c.RestartDowns, func(d time.Duration) bool { return d < 0 }):
		return fmt.Errorf("restart downs %v: want durations >= 0", c.RestartDowns)
	case len(c.RestartDowns) > 0 && c.RestartTimeout <= 0:
		return fmt.Errorf("restart timeout %v: want > 0", c.RestartTimeout)
	case c.Race && (c.RaceMembers < 2 || c.RaceMembers > 3):
		return fmt.Errorf("race members %d: want 2 or 3 (kv cluster members; the apiservers use the first two)", c.RaceMembers)
	case c.Race && (c.RaceWriters < 1 || c.RaceIncrements < 1):
		return fmt.Errorf("race: %d writers x %d increments: want at least 1 of each", c.RaceWriters, c.RaceIncrements)
	}
	return nil
}
