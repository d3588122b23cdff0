package experiment

// The runner against a fake platform that records every call: proof that package platform's
// interfaces are all the runner needs of the place a scenario runs, and of the order it calls
// them in. Runs without root and without the testbed.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/results"
)

type fakeServerConfig struct {
	Port int `yaml:"port"`
}

func init() {
	kind.Register(kind.Def[fakeServerConfig]{
		Name: "fake-server", Role: kind.RoleComponent,
		Defaults: func() *fakeServerConfig { return &fakeServerConfig{Port: 8000} },
		Command: func(env kind.Env, cfg *fakeServerConfig) (kind.Command, error) {
			port := strconv.Itoa(cfg.Port)
			return kind.Command{Args: []string{"serve", "--platform", env.Platform}, ReadyAddr: "127.0.0.1:" + port, CPUs: 1}, nil
		},
		Endpoints: func(cfg *fakeServerConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: cfg.Port}}
		},
		// A run-time change reaches the instance through the platform's Dial.
		Set: func(ctx context.Context, env kind.Env, cfg *fakeServerConfig, _ *yaml.Node) error {
			c, err := env.Dial(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(cfg.Port))
			if err != nil {
				return err
			}
			return c.Close()
		},
	})
	kind.Register(kind.Def[struct{}]{
		Name: "fake-load", Role: kind.RoleWorkload,
		Defaults: func() *struct{} { return &struct{}{} },
		Command: func(kind.Env, *struct{}) (kind.Command, error) {
			return kind.Command{Args: []string{"run-until-fault"}}, nil
		},
		Overrun: func(*struct{}) time.Duration { return 20 * time.Second },
	})
}

// fakeProvider is a platform.Provider whose platforms record their calls in log.
type fakeProvider struct {
	log    *callLog
	reject string // a fault action Check refuses
	// workloadExit is the exit code of the "run-until-fault" workload (0 by default).
	workloadExit int
}

func (p fakeProvider) Check(_ *platform.Topology, faults []platform.Fault) error {
	p.log.add("check")
	for _, f := range faults {
		if f.Action == p.reject {
			return fmt.Errorf("platform fake cannot apply fault %s", f.Action)
		}
	}
	return nil
}

func (p fakeProvider) Endpoint(name string) string { return "fake:" + name }

func (p fakeProvider) Up(_ context.Context, cfg platform.Config) (platform.Platform, error) {
	p.log.add("up " + cfg.Name)
	return &fakePlatform{log: p.log, topo: cfg.Topology, faulted: make(chan struct{}), workloadExit: p.workloadExit}, nil
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	l.calls = append(l.calls, call)
	l.mu.Unlock()
}

func (l *callLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// fakePlatform runs no processes: a "serve" instance runs until stopped, a "run-until-fault"
// instance (the workload) exits with 0 once a fault has been applied, so that the order of
// events is fixed without timing.
type fakePlatform struct {
	log     *callLog
	topo    *platform.Topology
	mu      sync.Mutex
	insts   []*fakeInstance
	faulted chan struct{} // closed by the first Apply
	once    sync.Once

	workloadExit int
}

func (p *fakePlatform) NodeAddrs() map[string]string {
	out := map[string]string{}
	for i, n := range p.topo.Nodes {
		out[n.Name] = fmt.Sprintf("192.0.2.%d", i+1)
	}
	return out
}

func (p *fakePlatform) Start(_ context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	p.log.add(fmt.Sprintf("start %s on %s: %s", spec.Name, spec.Node, strings.Join(spec.Args, " ")))
	if _, err := os.Stat(spec.LogDir); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	inst := &fakeInstance{log: p.log, name: spec.Name, done: make(chan struct{})}
	p.mu.Lock()
	p.insts = append(p.insts, inst)
	p.mu.Unlock()
	if spec.Args[0] == "run-until-fault" {
		go func() {
			<-p.faulted
			if spec.Stdout != nil {
				fmt.Fprintln(spec.Stdout, `{"type":"done","ts":1,"sent":10}`)
			}
			inst.exit(platform.Exit{Code: p.workloadExit})
		}()
	}
	return inst, nil
}

func (p *fakePlatform) Dial(_ context.Context, node, network, addr string) (net.Conn, error) {
	p.log.add(fmt.Sprintf("dial %s %s %s", node, network, addr))
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

func (p *fakePlatform) Apply(_ context.Context, f platform.Fault) (string, error) {
	p.log.add(fmt.Sprintf("apply %s %s", f.Action, strings.Join(f.Link, "-")))
	p.once.Do(func() { close(p.faulted) })
	return "link cut", nil
}

func (p *fakePlatform) Sample(ctx context.Context, interval time.Duration, emit func([]platform.Sample)) {
	p.log.add("sample")
	start := time.Now()
	round := func() {
		rows := []platform.Sample{}
		for _, n := range p.topo.Nodes {
			rows = append(rows, platform.Sample{T: time.Since(start), Node: n.Name, CPUSeconds: 1})
		}
		emit(rows)
	}
	round()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.log.add("sample end")
			return
		case <-t.C:
			round()
		}
	}
}

func (p *fakePlatform) Down() error {
	p.mu.Lock()
	insts := slices.Clone(p.insts)
	p.mu.Unlock()
	for _, inst := range insts {
		_ = inst.Stop(time.Second)
	}
	p.log.add("down")
	return nil
}

type fakeInstance struct {
	log  *callLog
	name string
	done chan struct{}
	mu   sync.Mutex
	st   platform.Exit
	once sync.Once
}

func (i *fakeInstance) exit(st platform.Exit) {
	i.once.Do(func() {
		i.mu.Lock()
		i.st = st
		i.mu.Unlock()
		i.log.add("exit " + i.name)
		close(i.done)
	})
}

func (i *fakeInstance) Done() <-chan struct{} { return i.done }

func (i *fakeInstance) Exit() platform.Exit {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.st
}

func (i *fakeInstance) Stop(time.Duration) error {
	select {
	case <-i.done:
		return nil
	default:
	}
	i.log.add("stop " + i.name)
	i.exit(platform.Exit{Code: -1, Signal: "terminated"})
	return nil
}

const fakeScenario = `version: 1
name: fake
duration: 1s
topology:
  nodes: [{name: a}, {name: b}]
  links: [{between: [a, b], delay: 1ms}]
components:
  - {name: srv, kind: fake-server, node: b, config: {port: 8000}}
workloads:
  - {name: load, kind: fake-load, node: a}
events:
  - {at: 100ms, action: set, component: srv, config: {port: 8000}}
  - {at: 200ms, action: partition, link: [a, b]}
`

func writeFakeScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake.yaml")
	if err := os.WriteFile(path, []byte(fakeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunnerNeedsOnlyThePlatform(t *testing.T) {
	log := &callLog{}
	opts := Options{Out: t.TempDir(), Binary: "/bin/continuum", Platform: fakeProvider{log: log},
		SampleInterval: 50 * time.Millisecond}
	res, err := Execute(context.Background(), writeFakeScenario(t), opts)
	if err != nil {
		t.Fatalf("Execute: %v (calls %q)", err, log.list())
	}
	calls := log.list()
	runName := fmt.Sprintf("run%d-001", os.Getpid()%100000)
	pos := func(call string) int {
		t.Helper()
		i := slices.Index(calls, call)
		if i < 0 {
			t.Fatalf("no call %q in %q", call, calls)
		}
		return i
	}
	// The order the runner promises a platform: checked before it is up; components started and
	// ready (dialled from their node) before the clock starts; the sampler and the workloads,
	// then the events in timeline order (the set dials through the platform); the sampler
	// stopped before the platform goes down, which stops what still runs.
	order := []string{
		"check",
		"up " + runName,
		"start srv on b: serve --platform fake:" + runName,
		"dial b tcp 127.0.0.1:8000",
		"start load on a: run-until-fault",
		"apply partition a-b",
		"exit load",
		"sample end",
		"stop srv",
		"down",
	}
	for i := 1; i < len(order); i++ {
		if pos(order[i-1]) >= pos(order[i]) {
			t.Errorf("%q came after %q: %q", order[i-1], order[i], calls)
		}
	}
	if s := pos("sample"); s < pos("dial b tcp 127.0.0.1:8000") || s > pos("sample end") {
		t.Errorf("sampler ran outside the run's clock: %q", calls)
	}
	if n := strings.Count(strings.Join(calls, "\n"), "dial b tcp 127.0.0.1:8000"); n != 2 {
		t.Errorf("%d dials to srv, want 2 (ready, set): %q", n, calls)
	}

	// The results directory is written as on the testbed.
	rdir := results.RunDir(res.Dir, "001")
	var run results.Run
	if err := results.ReadJSON(filepath.Join(rdir, results.RunFile), &run); err != nil {
		t.Fatal(err)
	}
	if run.Status != "ok" || run.Testbed != runName {
		t.Errorf("run.json: status %q testbed %q, want ok %s", run.Status, run.Testbed, runName)
	}
	events := readCSV(t, filepath.Join(rdir, results.EventsFile))
	if len(events) != 2 || events[0]["action"] != "set" || events[0]["status"] != "ok" ||
		events[1]["action"] != "partition" || events[1]["target"] != "a-b" || events[1]["detail"] != "link cut" || events[1]["status"] != "ok" {
		t.Errorf("events.csv = %v", events)
	}
	if samples := readCSV(t, filepath.Join(rdir, results.SamplesFile)); len(samples) < 2 || samples[0]["node"] != "a" {
		t.Errorf("samples.csv = %v", samples)
	}
	for _, f := range []string{filepath.Join(res.Dir, results.SummaryFile), res.Report, filepath.Join(res.Dir, results.ScenarioFile)} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

func TestPlatformCheckRejectsBeforeAnythingStarts(t *testing.T) {
	log := &callLog{}
	out := t.TempDir()
	opts := Options{Out: out, Binary: "/bin/continuum", Platform: fakeProvider{log: log, reject: "partition"}}
	path := writeFakeScenario(t)
	for name, run := range map[string]func() error{
		"run":   func() error { _, err := Execute(context.Background(), path, opts); return err },
		"check": func() error { _, err := Check(path, opts); return err },
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "platform fake cannot apply fault partition") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want the platform's refusal naming the scenario", name, err)
		}
	}
	if calls := log.list(); !slices.Equal(calls, []string{"check", "check"}) {
		t.Errorf("calls %q, want only the checks", calls)
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused scenario left %v in the results dir", entries)
	}
	if _, err := Execute(context.Background(), path, Options{Out: out}); err == nil || !strings.Contains(err.Error(), "Options.Platform") {
		t.Errorf("without a platform: %v", err)
	}
}

// TestRunnerImportsNoPlatform: the runner knows platforms only through package platform, so a
// second one is wiring, not a runner change (docs/architecture.md, Platforms).
func TestRunnerImportsNoPlatform(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".", "./kind").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasSuffix(imp, "/internal/testbed") || strings.Contains(imp, "/internal/testbed/") {
			t.Errorf("the runner imports %s; it must talk to the platform interface only", imp)
		}
	}
}

// A workload that got nothing through (exit loadgen.ExitNothingThrough) fails the run, with a
// message that says so and how to allow it, unless the workload declares expect_failures.
func TestWorkloadNothingThrough(t *testing.T) {
	for _, expect := range []bool{false, true} {
		t.Run(fmt.Sprintf("expect_failures=%v", expect), func(t *testing.T) {
			doc := fakeScenario
			if expect {
				doc = strings.Replace(doc, "node: a}", "node: a, expect_failures: true}", 1)
			}
			path := filepath.Join(t.TempDir(), "fake.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := Options{Out: t.TempDir(), Binary: "/bin/continuum", SampleInterval: 50 * time.Millisecond,
				Platform: fakeProvider{log: &callLog{}, workloadExit: loadgen.ExitNothingThrough}}
			res, err := Execute(context.Background(), path, opts)
			if expect {
				if err != nil || res.Failed != 0 {
					t.Fatalf("Execute: %v, %d failed; want success", err, res.Failed)
				}
				return
			}
			if err == nil || res == nil || res.Failed != 1 {
				t.Fatalf("Execute: %v; want one failed run", err)
			}
			var run results.Run
			if err := results.ReadJSON(filepath.Join(results.RunDir(res.Dir, "001"), results.RunFile), &run); err != nil {
				t.Fatal(err)
			}
			if run.Status != "failed" || !strings.Contains(run.Error, "workload load got nothing through") ||
				!strings.Contains(run.Error, "expect_failures: true") {
				t.Errorf("run.json: status %q error %q", run.Status, run.Error)
			}
		})
	}
}
