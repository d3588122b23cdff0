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
	// exited: what the next Observe reports as ended (as the platform would a deleted pod);
	// a Stop forgets the service.
	exited map[string]string
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
	r.mu.Lock()
	defer r.mu.Unlock()
	return Observation{Exited: maps.Clone(r.exited), Isolated: map[string]bool{}}, nil
}

// vanish makes services end as if their pods were deleted: their servers close, and the
// next Observe reports them gone.
func (r *podRunner) vanish(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if srv := r.srv[n]; srv != nil {
			_ = srv.Close()
			delete(r.srv, n)
		}
		r.exited[n] = gone
		r.stop = append(r.stop, n) // ended by the platform
	}
}

func (r *podRunner) Apart(string) bool { return true }

func (r *podRunner) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.exited, name)
}

// flag is the value of flag in a command line ("" when absent).
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// Where services run apart (pods), an aggregator is reached where the runner says it started,
// not at its node, and clients get the partition table in their command line (no file of the
// orchestrator's reaches them). When the global aggregator's pod and a client's go in one
// observation, the client's node leaves, and the global comes back at a new address with every
// remaining child started again pointed there; the departed client is not started again, and
// nothing runs that the orchestrator does not track.
func TestServicesApartFollowTheirAggregatorsAddress(t *testing.T) {
	dir := t.TempDir()
	r := &podRunner{srv: map[string]*http.Server{}, args: map[string][][]string{}, host: map[string]string{}, exited: map[string]string{}}
	t.Cleanup(func() {
		for n := range r.srv {
			_ = r.Stop(context.Background(), n)
		}
	})
	o, err := New(Config{Runner: r, Members: CSVMembers(filepath.Join(dir, "none.csv"), nil, ""), Out: filepath.Join(dir, "out"),
		Token: "t0ken", BasePort: 23000, Options: plan.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	j := newRun(o, JobSpec{Strategy: plan.Centralized, Budget: 1e6, ModelMB: 10, Dataset: "digits", Seed: 1})
	client := func(id string, class int) Member {
		return Member{Host: "n-" + id, Node: plan.Node{ID: id, Role: plan.RoleClient, Cost: map[string]float64{"g": 10}, Data: map[int]int{class: 10}}}
	}
	j.members = map[string]Member{"g": {Host: "n-g", Node: plan.Node{ID: "g", Role: plan.RoleGlobal}},
		"c1": client("c1", 0), "c2": client("c2", 1), "c3": client("c3", 2)}
	j.ports = map[string]int{"g": 23000, "c1": 23001, "c2": 23002, "c3": 23003}
	j.avail = map[string]bool{"g": true, "c1": true, "c2": true, "c3": true}
	if err := j.writePartition(); err != nil {
		t.Fatal(err)
	}
	conf := plan.Config{Strategy: plan.Centralized, Global: "g", Clients: []string{"c1", "c2", "c3"}, Epochs: 1}
	j.st.Config = conf
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
	for _, c := range []string{"c1", "c2", "c3"} {
		if got := flag(last("fl-cl-"+c), "--server"); got != g0+":23000" {
			t.Errorf("%s's --server %q, want the global's address %s:23000", c, got, g0)
		}
	}
	if got := flag(last("fl-cl-c3"), "--partition-json"); !strings.Contains(got, `"c3":{"2":10}`) || !strings.Contains(got, `"dataset":"digits"`) {
		t.Errorf("c3's --partition-json %q, want the table with c3's row", got)
	}

	// The global's and c3's pods go in one observation.
	r.vanish("fl-ga-g", "fl-cl-c3")
	if finished, err := j.monitor(ctx); err != nil || finished {
		t.Fatalf("monitor: finished %v, %v", finished, err)
	}
	g1 := r.host["fl-ga-g"]
	if g1 == g0 {
		t.Fatalf("the global aggregator came back at %s, as before: the runner should move it", g1)
	}
	for _, c := range []string{"c1", "c2"} {
		if got := flag(last("fl-cl-"+c), "--server"); got != g1+":23000" {
			t.Errorf("after the move: %s's --server %q, want %s:23000", c, got, g1)
		}
	}
	r.mu.Lock()
	starts := map[string]int{}
	for n, a := range r.args {
		starts[n] = len(a)
	}
	r.mu.Unlock()
	if want := map[string]int{"fl-ga-g": 2, "fl-cl-c1": 2, "fl-cl-c2": 2, "fl-cl-c3": 1}; !maps.Equal(starts, want) {
		t.Errorf("starts %v, want %v (c3 left: not started again)", starts, want)
	}
	j.mu.Lock()
	running := slices.Sorted(maps.Keys(j.running))
	left := j.left["c3"]
	configured := j.st.Config
	j.mu.Unlock()
	if !slices.Equal(running, []string{"fl-cl-c1", "fl-cl-c2", "fl-ga-g"}) {
		t.Errorf("running %v, want the global, c1 and c2", running)
	}
	if left == "" || slices.Contains(configured.Clients, "c3") {
		t.Errorf("c3: left %q, configuration %v; want c3 out of it", left, configured.Clients)
	}
	// Every service the runner still runs (started more often than stopped) is one the
	// orchestrator tracks.
	r.mu.Lock()
	live := map[string]int{}
	for n, a := range r.args {
		live[n] += len(a)
	}
	for _, n := range r.stop {
		live[n]--
	}
	r.mu.Unlock()
	for n, k := range live {
		if k != 0 && !slices.Contains(running, n) || k > 1 {
			t.Errorf("%s: started %d more times than stopped, running %v", n, k, running)
		}
	}
	// A client group apart gets its plan (its clients' servers: the global's new address) and
	// the partition table in its command line.
	gs, err := j.groupService("n-x", []string{"c1", "c2"}, map[string]string{"c1": "g", "c2": "g"})
	if err != nil {
		t.Fatal(err)
	}
	if p := flag(gs.Args, "--plan-json"); !strings.Contains(p, `"server":"`+g1+`:23000"`) || flag(gs.Args, "--plan") != "" ||
		flag(gs.Args, "--partition-json") == "" {
		t.Errorf("group command line %q, want --plan-json with %s:23000 and --partition-json", gs.Args, g1)
	}
	// The exits were handled: the runner was told to forget them, and the next observation
	// has nothing to report.
	if obs, _ := r.Observe(ctx); len(obs.Exited) != 0 {
		t.Errorf("still reported exited: %v", obs.Exited)
	}
}

// The reports already received when the job ends are taken: the global aggregator posts its last
// rounds' reports before it exits, and the loop may see the exit first.
func TestDrainReportsTakesWhatArrived(t *testing.T) {
	o := newAPIOrchestrator(t, "t0ken")
	j := newRun(o, JobSpec{Rounds: 3})
	for r := 1; r <= 3; r++ {
		j.report(Report{ID: "g", Role: "global", Event: "round", Round: r})
	}
	j.drainReports()
	if st := j.status(); st.Round != 3 {
		t.Errorf("round %d after the drain, want 3 (the last report)", st.Round)
	}
	select {
	case rep := <-j.reports:
		t.Errorf("a report left behind: %+v", rep)
	default:
	}
}
