package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// podRunner runs services as a platform whose instances run apart would (pods): every start
// gets a new address, 127.0.0.k with k counting up, and an aggregator's control API answers
// /status there (nothing else runs). It records each start's command line by service name.
type podRunner struct {
	mu   sync.Mutex
	next int
	srv  map[string]*http.Server
	args map[string][][]string // service -> command line of each start
	host map[string]string     // service -> its current address
	stop []string
}

func (r *podRunner) Start(_ context.Context, s Service) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	host := "127.0.0." + strconv.Itoa(1+r.next)
	r.args[s.Name] = append(r.args[s.Name], s.Args)
	r.host[s.Name] = host
	if role := roleOf(s.Name); role == "global" || role == "local" {
		i := slices.Index(s.Args, "--control")
		_, port, _ := net.SplitHostPort(s.Args[i+1])
		ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			return "", err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"round": 0}`)
		})}
		go func() { _ = srv.Serve(ln) }()
		r.srv[s.Name] = srv
	}
	return host, nil
}

func (r *podRunner) Stop(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if srv := r.srv[name]; srv != nil {
		_ = srv.Close()
		delete(r.srv, name)
	}
	r.stop = append(r.stop, name)
	return nil
}

func (r *podRunner) Observe(context.Context) (Observation, error) {
	return Observation{Exited: map[string]string{}, Isolated: map[string]bool{}}, nil
}

func (r *podRunner) Apart(string) bool { return true }

// flag is the value of flag in a command line ("" when absent).
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// Where services run apart (pods), an aggregator is reached where the runner says it started,
// not at its node; and a global aggregator that comes back at a new address has its children
// started again, pointed there (and theirs, as a restarted local aggregator has a new one too).
// Clients get the partition table in their command line, since no file of the orchestrator's
// reaches them.
func TestServicesApartFollowTheirAggregatorsAddress(t *testing.T) {
	dir := t.TempDir()
	r := &podRunner{srv: map[string]*http.Server{}, args: map[string][][]string{}, host: map[string]string{}}
	t.Cleanup(func() {
		for n := range r.srv {
			_ = r.Stop(context.Background(), n)
		}
	})
	o, err := New(Config{Runner: r, Members: CSVMembers(filepath.Join(dir, "none.csv"), nil, ""), Out: filepath.Join(dir, "out"),
		Token: "t0ken", BasePort: 23000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	j := newRun(o, JobSpec{Dataset: "digits", Seed: 1})
	j.members = map[string]Member{"g": {Host: "n-g"}, "e1": {Host: "n-e1"}, "e2": {Host: "n-e2", Node: plan.Node{Data: map[int]int{0: 10}}},
		"c3": {Host: "n-c3", Node: plan.Node{Data: map[int]int{1: 10}}}}
	j.ports = map[string]int{"g": 23000, "e1": 23001, "e2": 23002, "c3": 23003}
	if err := j.writePartition(); err != nil {
		t.Fatal(err)
	}
	conf := plan.Config{Global: "g", Clusters: []plan.Cluster{{Aggregator: "e1", Clients: []string{"e2"}}}, Clients: []string{"c3"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := j.apply(ctx, nil, conf, false); err != nil {
		t.Fatal(err)
	}
	last := func(name string) []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		a := r.args[name]
		if len(a) == 0 {
			t.Fatalf("%s never started", name)
		}
		return a[len(a)-1]
	}
	g0 := r.host["fl-ga-g"]
	if got := flag(last("fl-la-e1"), "--parent"); got != g0+":23000" {
		t.Errorf("local aggregator's --parent %q, want the global's address %s:23000", got, g0)
	}
	if got, want := flag(last("fl-cl-e2"), "--server"), r.host["fl-la-e1"]+":23001"; got != want {
		t.Errorf("e2's --server %q, want its aggregator's address %s", got, want)
	}
	if got := flag(last("fl-cl-c3"), "--partition-json"); !strings.Contains(got, `"c3":{"1":10}`) || !strings.Contains(got, `"dataset":"digits"`) {
		t.Errorf("c3's --partition-json %q, want the table with c3's row", got)
	}

	// The global aggregator exits and is started again at a new address (monitor's path).
	j.mu.Lock()
	delete(j.running, "fl-ga-g")
	j.mu.Unlock()
	before := j.aggregatorHost("g")
	if err := j.startService(ctx, j.globalService(conf, true)); err != nil {
		t.Fatal(err)
	}
	if after := j.aggregatorHost("g"); after == before {
		t.Fatalf("the global aggregator came back at %s, as before: the runner should move it", after)
	}
	if err := j.restartChildren(ctx, conf, "g"); err != nil {
		t.Fatal(err)
	}
	g1 := r.host["fl-ga-g"]
	if got := flag(last("fl-la-e1"), "--parent"); got != g1+":23000" {
		t.Errorf("after the move: local aggregator's --parent %q, want %s:23000", got, g1)
	}
	if got := flag(last("fl-cl-c3"), "--server"); got != g1+":23000" {
		t.Errorf("after the move: c3's --server %q, want %s:23000", got, g1)
	}
	// e2's aggregator (e1) was started again too, at a new address: e2 follows it.
	if got, want := flag(last("fl-cl-e2"), "--server"), r.host["fl-la-e1"]+":23001"; got != want {
		t.Errorf("after the move: e2's --server %q, want %s", got, want)
	}
	r.mu.Lock()
	starts := map[string]int{}
	for n, a := range r.args {
		starts[n] = len(a)
	}
	r.mu.Unlock()
	if want := map[string]int{"fl-ga-g": 2, "fl-la-e1": 2, "fl-cl-e2": 2, "fl-cl-c3": 2}; !maps.Equal(starts, want) {
		t.Errorf("starts %v, want %v", starts, want)
	}
}
