package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/httpjson"
	"github.com/continuum-project/continuum/internal/pyenv"
)

// Member is an FL node as the orchestrator knows it: its features, where its service runs and
// how unreliable it is (the seed's failure probability).
type Member struct {
	plan.Node
	Host     string  `json:"host"`
	FailProb float64 `json:"fail_prob,omitempty"`
}

// Config is how the orchestrator runs (the job is what it runs).
type Config struct {
	Runner Runner
	// Members returns the FL nodes and their features (phase 2: collecting node features).
	Members func(ctx context.Context) ([]Member, error)
	Python  pyenv.Python
	Out     string
	// API is the orchestrator's URL as services reach it (reports, the model repository).
	API  string
	Poll time.Duration // how often the nodes are observed (default 500 ms)
	// BasePort: the service of the i-th node (in ID order) listens on BasePort+i and serves its
	// control API on BasePort+1000+i, so that several services can share a host.
	BasePort int
	Options  plan.Options
	// GroupClients runs the clients of each host in one process (hundreds of clients on a small
	// machine: PyTorch's memory is shared); a change to one client restarts its host's group.
	GroupClients bool
	Logf         func(format string, args ...any)
	// Token is what callers of the API send as "Authorization: Bearer TOKEN" (see auth.go);
	// the services get tokens derived from it. Empty: New generates one (Orchestrator.Token).
	Token string
}

// Orchestrator runs one training job at a time.
type Orchestrator struct {
	cfg  Config
	repo *ModelRepo
	rec  *recorder

	mu      sync.Mutex
	job     *run // the current or last job
	removed map[string]bool
	joined  map[string]bool // joins requested since the job last looked
	wake    chan struct{}
}

// New opens the output directory and the model repository in it.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.Runner == nil || cfg.Members == nil {
		return nil, errors.New("orchestrator: a Runner and a Members source are required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.BasePort == 0 {
		cfg.BasePort = 8080
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Token == "" {
		cfg.Token = randomToken()
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	repo, err := NewModelRepo(filepath.Join(cfg.Out, "model-repo"))
	if err != nil {
		return nil, err
	}
	rec, err := newRecorder(cfg.Out)
	if err != nil {
		return nil, err
	}
	return &Orchestrator{cfg: cfg, repo: repo, rec: rec, removed: map[string]bool{}, joined: map[string]bool{}, wake: make(chan struct{}, 1)}, nil
}

// Close flushes the output files.
func (o *Orchestrator) Close() error { return o.rec.close() }

// Handler is the HTTP API: jobs, services' reports, the model repository, node changes. Every
// route but GET /health needs a token (auth.go).
func (o *Orchestrator) Handler() http.Handler { return o.authorize(o.routes()) }

func (o *Orchestrator) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", o.handleSubmit)
	mux.HandleFunc("GET /jobs/current", o.handleJob)
	mux.HandleFunc("POST /jobs/current/stop", o.handleStopJob)
	mux.HandleFunc("POST /report", o.handleReport)
	mux.HandleFunc("PUT /model", o.handlePutModel)
	mux.HandleFunc("GET /model/latest", o.handleGetModel)
	mux.HandleFunc("POST /nodes/{id}/leave", func(w http.ResponseWriter, r *http.Request) { o.handleNode(w, r, true) })
	mux.HandleFunc("POST /nodes/{id}/join", func(w http.ResponseWriter, r *http.Request) { o.handleNode(w, r, false) })
	mux.HandleFunc("PUT /nodes/excluded", o.handleExcluded)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, 200, map[string]string{"status": "ok"})
	})
	return mux
}

// Submit starts a job; it fails while another runs.
func (o *Orchestrator) Submit(ctx context.Context, spec JobSpec) (*Status, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	o.mu.Lock()
	if o.job != nil && !o.job.finished() {
		o.mu.Unlock()
		return nil, errJobRunning
	}
	j := newRun(o, spec)
	o.job = j
	o.mu.Unlock()
	go j.loop(ctx)
	st := j.status()
	return &st, nil
}

var errJobRunning = errors.New("a job is already running: stop it first (POST /jobs/current/stop)")

// Current returns the current (or last) job's status; ok is false before the first job.
func (o *Orchestrator) Current() (Status, bool) {
	o.mu.Lock()
	j := o.job
	o.mu.Unlock()
	if j == nil {
		return Status{}, false
	}
	return j.status(), true
}

// Wait blocks until the current job has finished (or ctx ends).
func (o *Orchestrator) Wait(ctx context.Context) (Status, error) {
	o.mu.Lock()
	j := o.job
	o.mu.Unlock()
	if j == nil {
		return Status{}, errors.New("no job")
	}
	select {
	case <-j.done:
		return j.status(), nil
	case <-ctx.Done():
		return j.status(), ctx.Err()
	}
}

// SetAvailable marks a node as removed (leave) or available again (join), as the seed's
// simulated orchestrator did by editing its topology file.
func (o *Orchestrator) SetAvailable(id string, available bool) {
	o.mu.Lock()
	if available {
		delete(o.removed, id)
		o.joined[id] = true
	} else {
		o.removed[id] = true
	}
	o.mu.Unlock()
	o.poke()
}

// SetExcluded replaces the set of nodes kept out of training: nodes newly in it leave, nodes
// no longer in it join.
func (o *Orchestrator) SetExcluded(ids []string) {
	o.mu.Lock()
	next := map[string]bool{}
	for _, id := range ids {
		next[id] = true
	}
	for id := range o.removed {
		if !next[id] {
			o.joined[id] = true
		}
	}
	o.removed = next
	o.mu.Unlock()
	o.poke()
}

// Excluded lists the nodes kept out, sorted.
func (o *Orchestrator) Excluded() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return sortedKeys(o.removed)
}

func (o *Orchestrator) handleExcluded(w http.ResponseWriter, r *http.Request) {
	var ids []string
	if err := httpjson.Decode(w, r, 1<<20, &ids); err != nil {
		httpjson.Error(w, httpjson.Status(err), "excluded nodes: want a JSON array of node IDs: "+err.Error())
		return
	}
	o.SetExcluded(ids)
	httpjson.Write(w, 200, map[string]any{"excluded": o.Excluded()})
}

func (o *Orchestrator) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// wasJoined reports (once) whether a join of id was requested.
func (o *Orchestrator) wasJoined(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	ok := o.joined[id]
	delete(o.joined, id)
	return ok
}

func (o *Orchestrator) isRemoved(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.removed[id]
}

func (o *Orchestrator) handleSubmit(w http.ResponseWriter, r *http.Request) {
	spec := DefaultJob()
	if err := httpjson.Decode(w, r, 1<<20, &spec); err != nil {
		httpjson.Error(w, httpjson.Status(err), "job: "+err.Error())
		return
	}
	// A job outlives the request that submitted it.
	st, err := o.Submit(context.WithoutCancel(r.Context()), spec)
	switch {
	case errors.Is(err, errJobRunning):
		httpjson.Error(w, 409, err.Error())
	case err != nil:
		httpjson.Error(w, 400, err.Error())
	default:
		httpjson.Write(w, 202, st)
	}
}

func (o *Orchestrator) handleJob(w http.ResponseWriter, _ *http.Request) {
	st, ok := o.Current()
	if !ok {
		httpjson.Error(w, 404, "no job submitted yet (POST /jobs)")
		return
	}
	httpjson.Write(w, 200, st)
}

func (o *Orchestrator) handleStopJob(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body) // optional
	if body.Reason == "" {
		body.Reason = "stopped by request"
	}
	o.mu.Lock()
	j := o.job
	o.mu.Unlock()
	if j == nil {
		httpjson.Error(w, 404, "no job")
		return
	}
	j.requestStop(body.Reason)
	httpjson.Write(w, 200, j.status())
}

func (o *Orchestrator) handleNode(w http.ResponseWriter, r *http.Request, leave bool) {
	id := r.PathValue("id")
	o.SetAvailable(id, !leave)
	httpjson.Write(w, 200, map[string]any{"node": id, "available": !leave})
}

// Report is one line of a service's fl.jsonl (python/src/continuum_fl/report.py).
type Report struct {
	T             float64  `json:"t"`
	ID            string   `json:"id"`
	Role          string   `json:"role"`
	Event         string   `json:"event"`
	Round         int      `json:"round"`
	Loss          *float64 `json:"loss,omitempty"`
	Accuracy      *float64 `json:"accuracy,omitempty"`
	Examples      int      `json:"examples,omitempty"`
	Clients       int      `json:"clients,omitempty"`
	Failures      int      `json:"failures,omitempty"`
	BytesSent     int64    `json:"bytes_sent"`
	BytesReceived int64    `json:"bytes_received"`
	Epochs        int      `json:"epochs,omitempty"`
	LocalRounds   int      `json:"local_rounds,omitempty"`
}

func (o *Orchestrator) handleReport(w http.ResponseWriter, r *http.Request) {
	var rep Report
	// Not httpjson.Decode: a service's report line carries more fields than the orchestrator
	// reads (report.py's events), and they must not make it refuse the report.
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&rep); err != nil {
		httpjson.Error(w, 400, "report: "+err.Error())
		return
	}
	// A service reports its own events only: a client's report claiming the global
	// aggregator's role (whose round reports end the job) or another node's id is refused.
	if c := callerOf(r); c.service && (rep.Role != c.role || rep.ID != c.id) {
		httpjson.Error(w, http.StatusForbidden, fmt.Sprintf(
			"report of %s %q with the token of %s %q: a service reports its own events only", rep.Role, rep.ID, c.role, c.id))
		return
	}
	o.mu.Lock()
	j := o.job
	o.mu.Unlock()
	if j != nil {
		j.report(rep)
	}
	w.WriteHeader(204)
}

// maxSnapshot bounds an uploaded model (the seed's CNN on CIFAR-10 is ~3.5 MB).
const maxSnapshot = 512 << 20

func (o *Orchestrator) handlePutModel(w http.ResponseWriter, r *http.Request) {
	round, err := strconv.Atoi(r.URL.Query().Get("round"))
	if err != nil || round < 0 {
		httpjson.Error(w, 400, fmt.Sprintf("round %q: want an integer >= 0 (PUT /model?round=R)", r.URL.Query().Get("round")))
		return
	}
	if err := o.repo.Put(round, r.Body, maxSnapshot); err != nil {
		httpjson.Error(w, 400, err.Error())
		return
	}
	w.WriteHeader(204)
}

func (o *Orchestrator) handleGetModel(w http.ResponseWriter, r *http.Request) {
	round, path, ok := o.repo.Latest()
	if !ok {
		httpjson.Error(w, 404, "no snapshot yet")
		return
	}
	w.Header().Set("X-Round", strconv.Itoa(round))
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeFile(w, r, path)
}

// sortedIDs returns the IDs of members in order: the port of a node's service is fixed by its
// place here, so it does not change when others leave or join.
func sortedIDs(ms []Member) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return ids
}
