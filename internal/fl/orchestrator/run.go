package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// Status is a job's state as GET /jobs/current answers it.
type Status struct {
	State    string      `json:"state"` // starting, running, stopping, done, failed
	Reason   string      `json:"reason,omitempty"`
	Job      JobSpec     `json:"job"`
	Started  time.Time   `json:"started"`
	Round    int         `json:"round"`
	Accuracy *float64    `json:"accuracy,omitempty"`
	Loss     *float64    `json:"loss,omitempty"`
	Spent    float64     `json:"cost_spent"`
	Config   plan.Config `json:"config"`
	Configs  int         `json:"configurations"`
	// Reconfigurations lists every reconfiguration with its timings.
	Reconfigurations []Reconfiguration `json:"reconfigurations,omitempty"`
	Available        []string          `json:"available"`
}

// Reconfiguration is one node change handled: when it was seen, when the new configuration was
// in place, and when the global model next completed a round.
type Reconfiguration struct {
	Cause      string   `json:"cause"`
	DetectedAt float64  `json:"detected_at"`
	AppliedAt  float64  `json:"applied_at"`
	ApplyS     float64  `json:"apply_s"`
	ResumedAt  float64  `json:"resumed_at,omitempty"`
	ResumeS    float64  `json:"resume_s,omitempty"` // detected -> first global round completed after
	Restarted  []string `json:"restarted,omitempty"`
	Configured []string `json:"configured,omitempty"`
	Stopped    []string `json:"stopped,omitempty"`
	Decision   string   `json:"decision"`
}

type run struct {
	o    *Orchestrator
	spec JobSpec
	done chan struct{}

	reports chan Report
	stopReq chan string

	mu      sync.Mutex
	st      Status
	members map[string]Member
	ports   map[string]int
	avail   map[string]bool
	left    map[string]string // node -> why it left (a service exit keeps it out until it joins)
	running map[string]Service
	// hosts: the host each node's aggregator was last started at, as the Runner returned it
	// (where services run apart, a restarted aggregator's changes).
	hosts map[string]string
	// partition is the partition table as JSON (writePartition).
	partition string
	pending   *Reconfiguration // awaiting the first global round after it
	stopped   bool
}

func newRun(o *Orchestrator, spec JobSpec) *run {
	return &run{o: o, spec: spec, done: make(chan struct{}), reports: make(chan Report, 256), stopReq: make(chan string, 1),
		st: Status{State: "starting", Job: spec, Started: time.Now()}, left: map[string]string{}, running: map[string]Service{},
		hosts: map[string]string{}}
}

func (j *run) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

func (j *run) status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Reconfigurations = append([]Reconfiguration(nil), st.Reconfigurations...)
	st.Available = nil
	for id, ok := range j.avail {
		if ok {
			st.Available = append(st.Available, id)
		}
	}
	sort.Strings(st.Available)
	return st
}

func (j *run) report(r Report) {
	select {
	case j.reports <- r:
	default: // the loop is behind; per-round lines are also in each service's fl.jsonl
	}
}

func (j *run) requestStop(reason string) {
	select {
	case j.stopReq <- reason:
	default:
	}
}

// options are the orchestrator's planning options with the job's reconfiguration gain and seed.
func (j *run) options() plan.Options {
	o := j.o.cfg.Options
	o.MinGain = j.spec.MinGain
	o.Seed = uint64(j.spec.Seed)
	return o
}

func (j *run) logf(format string, args ...any) { j.o.cfg.Logf(format, args...) }

func (j *run) fail(err error) {
	j.logf("job failed: %v", err)
	j.o.rec.event(time.Now(), Event{Kind: EventFailed, Error: err.Error()})
	j.mu.Lock()
	j.st.State, j.st.Reason = "failed", err.Error()
	j.mu.Unlock()
	j.stopAll()
}

func (j *run) writePartition() error {
	clients := map[string]map[string]int{}
	for id, m := range j.members {
		if len(m.Data) == 0 {
			continue
		}
		d := map[string]int{}
		for c, n := range m.Data {
			d[strconv.Itoa(c)] = n
		}
		clients[id] = d
	}
	b, err := json.Marshal(map[string]any{"dataset": j.spec.Dataset, "seed": j.spec.Seed, "clients": clients})
	if err != nil {
		return err
	}
	// Clients that run apart from this host's files get the table in their command line
	// (--partition-json, bounded by the loop), the others its file.
	j.partition = string(b)
	return os.WriteFile(j.partitionPath(), b, 0o644)
}

// partitionArgs is how the client(s) on host get the partition table.
func (j *run) partitionArgs(host string) []string {
	if j.o.cfg.Runner.Apart(host) {
		return []string{"--partition-json", j.partition}
	}
	return []string{"--partition", j.partitionPath()}
}

// maxInlineJSON bounds a JSON argument or environment variable of a service (Linux takes 128
// KiB a string).
const maxInlineJSON = 100 << 10

func (j *run) partitionPath() string { return filepath.Join(j.o.cfg.Out, "partition.json") }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
