package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/report"
	"github.com/continuum-project/continuum/internal/results"
)

// Options configure Execute.
type Options struct {
	Out     string   // parent directory of the results directory (default "results")
	Sets    []string // --set path=value overrides
	Repeats int      // overrides the scenario's repeats when > 0
	// Select picks the runs to run (or check) out of the sweep; the zero value runs them all.
	Select Selection
	// Platform is where runs run: it brings one platform up per run (required; the wiring in
	// cmd/continuum gives the testbed). Check and DryCommands only ask it to check the scenario
	// and name its endpoint.
	Platform platform.Provider
	// Binary is the continuum binary components and workloads run (default: this executable).
	Binary string
	// Progress receives the live progress display (nil = none).
	Progress io.Writer
	// Interactive redraws the progress line in place (a terminal) instead of printing lines.
	Interactive bool
	Logger      *slog.Logger
	// Warnings receives the scenario's warnings (Scenario.Warnings), a line each, once it
	// loads (nil: dropped).
	Warnings io.Writer
	// Interval of the resource samplers (default 1 s).
	SampleInterval time.Duration
}

// Result says where an experiment's outputs went.
type Result struct {
	Dir    string // the results directory
	Report string // report.html
	Runs   int
	Failed int
}

// ErrInterrupted is returned (wrapped) when the context was cancelled mid-experiment; the
// results so far are kept and reported.
var ErrInterrupted = errors.New("experiment interrupted")

// Execute loads and validates the scenario (nothing starts if it is invalid or asks for what
// opts.Platform cannot do), runs every sweep combination x repeat on a fresh platform, and
// writes the results directory with summary.json, report.html and summary.md.
func Execute(ctx context.Context, path string, opts Options) (*Result, error) {
	sc, runs, err := loadRuns(path, opts)
	if err != nil {
		return nil, err
	}
	if opts.Out == "" {
		opts.Out = "results"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Binary == "" {
		if opts.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	dir := filepath.Join(opts.Out, sc.Name+"-"+started.Format("20060102-150405"))
	if _, err := os.Stat(dir); err == nil {
		dir += fmt.Sprintf("-%d", os.Getpid())
	}
	if err := os.MkdirAll(filepath.Join(dir, results.RunsDir), 0o755); err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	resolved, err := sc.MarshalResolved()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, results.ScenarioFile), resolved, 0o644); err != nil {
		return nil, err
	}
	if err := results.WriteJSON(filepath.Join(dir, results.EnvironmentFile), environment(started)); err != nil {
		return nil, err
	}
	pr := newProgress(opts.Progress, opts.Interactive, len(runs))
	res := &Result{Dir: dir, Runs: len(runs)}
	var records []runRecord
	var runErr error
	for i, r := range runs {
		rec := runOne(ctx, r, i, dir, opts, pr)
		records = append(records, rec)
		if rec.Status == "failed" {
			res.Failed++
			opts.Logger.Error("run failed", "run", r.ID, "error", rec.Error)
			pr.note(fmt.Sprintf("run %s failed: %s", r.ID, rec.Error))
		}
		if ctx.Err() != nil {
			runErr = fmt.Errorf("%w after %d of %d runs", ErrInterrupted, i+1, len(runs))
			break
		}
	}
	pr.finish()
	sum := buildSummary(sc.Name, started, time.Now(), records)
	if err := results.WriteJSON(filepath.Join(dir, results.SummaryFile), sum); err != nil {
		return res, err
	}
	if err := report.Render(dir); err != nil {
		return res, fmt.Errorf("report: %w", err)
	}
	res.Report = report.HTMLPath(dir)
	if runErr == nil && res.Failed > 0 {
		runErr = fmt.Errorf("%d of %d runs failed (see %s)", res.Failed, len(runs), filepath.Join(dir, results.RunsDir))
	}
	return res, runErr
}

// loadRuns loads the scenario at path with opts' --set overrides and repeats, expands it into
// its runs, and has opts.Platform check every run's topology and faults.
func loadRuns(path string, opts Options) (*Scenario, []Run, error) {
	if opts.Platform == nil {
		return nil, nil, errors.New("experiment: no platform to run on (Options.Platform)")
	}
	sc, err := LoadScenario(path, opts.Sets)
	if err != nil {
		return nil, nil, err
	}
	if opts.Warnings != nil {
		for _, w := range sc.Warnings {
			fmt.Fprintln(opts.Warnings, "warning:", w)
		}
	}
	if opts.Repeats > 0 {
		sc.Repeats = opts.Repeats
	}
	runs, err := sc.Expand()
	if err != nil {
		return nil, nil, err
	}
	if runs, err = opts.Select.apply(runs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sc.File, err)
	}
	for _, r := range runs {
		if err := opts.Platform.Check(r.Scenario.Topology, r.Scenario.faults()); err != nil {
			if len(r.Params) > 0 {
				return nil, nil, fmt.Errorf("%s: run %s (%s): %w", sc.File, r.ID, paramText(sortedParams(r.Params), r.Params, r.Labels), err)
			}
			return nil, nil, fmt.Errorf("%s: %w", sc.File, err)
		}
	}
	return sc, runs, nil
}

// faults are the scenario's fault events (every event but set and start), Action set.
func (sc *Scenario) faults() []platform.Fault {
	var out []platform.Fault
	for _, ev := range sc.Events {
		if ev.Action == ActionSet || ev.Action == ActionStart {
			continue
		}
		f := ev.Fault
		f.Action = ev.Action
		out = append(out, f)
	}
	return out
}

// runRecord is a run's run.json plus what the runner keeps about it in memory.
type runRecord struct {
	results.Run
	dir       string
	workloads []string
	instances []Instance      // components, then workloads
	fabric    *results.Fabric // nil: the platform does not emulate the network
}

// runNames hands out the names runs' platforms are brought up under: run<pid>-<id>, and while
// a run of this process holds that name (two Executes at once: tests on one cluster),
// run<pid>-<k>-<id> with the lowest k >= 2 no run holds.
var runNames = &nameSet{held: map[string]bool{}}

type nameSet struct {
	mu   sync.Mutex
	held map[string]bool
}

func (s *nameSet) take(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := os.Getpid() % 100000
	name := fmt.Sprintf("run%d-%s", pid, id)
	for k := 2; s.held[name]; k++ {
		name = fmt.Sprintf("run%d-%d-%s", pid, k, id)
	}
	s.held[name] = true
	return name
}

func (s *nameSet) release(name string) {
	s.mu.Lock()
	delete(s.held, name)
	s.mu.Unlock()
}

// runOne executes one run on a platform of its own and always takes the platform down.
func runOne(ctx context.Context, r Run, index int, dir string, opts Options, pr *progress) runRecord {
	sc := r.Scenario
	rdir := results.RunDir(dir, r.ID)
	rec := runRecord{Run: results.Run{ID: r.ID, Params: results.Params(r.Params), Labels: r.Labels, Repeat: r.Repeat,
		Started: time.Now().UTC(), DurationS: sc.Duration.Seconds(), WarmupS: sc.Warmup.Seconds(), Seed: sc.Seed,
		Testbed: runNames.take(r.ID)}, dir: rdir}
	defer runNames.release(rec.Testbed)
	if rec.Params == nil {
		rec.Params = results.Params{}
	}
	for _, w := range sc.Workloads {
		rec.workloads = append(rec.workloads, w.Name)
	}
	rec.instances = append(append([]Instance{}, sc.Components...), sc.Workloads...)
	for _, inst := range rec.instances {
		rec.Instances = append(rec.Instances, instanceRecord(inst))
	}
	err := func() (err error) {
		if err := os.MkdirAll(filepath.Join(rdir, results.LogsDir), 0o755); err != nil {
			return err
		}
		pr.phase(index, r.ID, "starting platform")
		pf, err := opts.Platform.Up(ctx, platform.Config{Name: rec.Testbed, Topology: sc.Topology,
			Seed: sc.Seed, Binary: opts.Binary, Dir: rdir, Logger: opts.Logger})
		if err != nil {
			return err
		}
		defer func() {
			if p := recover(); p != nil {
				_ = pf.Down()
				panic(p)
			}
			pr.phase(index, r.ID, "tearing down")
			if derr := pf.Down(); derr != nil && err == nil {
				err = fmt.Errorf("platform down: %w", derr)
			}
		}()
		ex := &execution{sc: sc, pf: pf, endpoint: opts.Platform.Endpoint(rec.Testbed), dir: rdir, opts: opts, pr: pr, index: index, id: r.ID}
		if e, err := platform.ParseEndpoint(ex.endpoint); err == nil {
			rec.Platform = e.Platform
		}
		defer func() {
			rec.T0, rec.fabric = ex.t0.UTC(), ex.fabric
			if d, ok := pf.(platform.LinkDescriber); ok {
				rec.LinkEmulation = d.Links()
			}
		}()
		return ex.run(ctx)
	}()
	switch {
	case err != nil && ctx.Err() == nil:
		rec.Status, rec.Error = "failed", err.Error()
	case ctx.Err() != nil:
		rec.Status = "interrupted"
		if err != nil && !errors.Is(err, context.Canceled) {
			rec.Error = err.Error()
		}
	default:
		rec.Status = "ok"
	}
	_ = results.WriteJSON(filepath.Join(rdir, results.RunFile), rec.Run)
	return rec
}

// execution is the state of one run while it executes.
type execution struct {
	sc       *Scenario
	pf       platform.Platform
	endpoint string // pf's endpoint, for kinds (kind.Env.Platform)
	dir      string
	opts     Options
	pr       *progress
	index    int
	id       string
	t0       time.Time       // set when the workloads start
	fabric   *results.Fabric // the emulated network's figures, once the sampler has stopped

	envs   map[string]kind.Env
	graces map[string]time.Duration // components' own stop grace (kind.Command.StopGrace)
	procs  map[string]platform.Instance
	kinds  map[string]*kind.Kind
	cfgs   map[string]any
}

func (ex *execution) env(inst Instance) kind.Env {
	env := instanceEnv(ex.sc, inst, ex.pf.NodeAddrs(), ex.dir, ex.opts.Binary, ex.endpoint)
	node := inst.Node
	env.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return ex.pf.Dial(ctx, node, network, addr)
	}
	return env
}

// instanceEnv is the Env of inst in a run of sc on the platform at endpoint whose nodes have
// the given addresses, with everything that does not need the running platform (Dial stays nil).
func instanceEnv(sc *Scenario, inst Instance, nodes map[string]string, runDir, binary, endpoint string) kind.Env {
	comps := map[string]kind.Component{}
	for _, c := range sc.Components {
		k, _ := kind.Lookup(c.Kind)
		comps[c.Name] = kind.Component{Node: c.Node, Kind: c.Kind, Config: c.DecodedConfig, Endpoints: k.EndpointsOf(c.DecodedConfig)}
	}
	return kind.Env{Instance: inst.Name, Node: inst.Node, Nodes: nodes, Components: comps,
		OutDir: instanceDir(runDir, inst), Binary: binary, Platform: endpoint,
		Seed: sc.Seed, Duration: sc.Duration.Duration, Warmup: sc.Warmup.Duration, ScenarioDir: filepath.Dir(sc.File)}
}

// instanceRecord is inst as run.json records it: a workload with the files its kind writes.
func instanceRecord(inst Instance) results.Instance {
	rec := results.Instance{Name: inst.Name, Kind: inst.Kind, Node: inst.Node}
	if k, _ := kind.Lookup(inst.Kind); k != nil && k.Role == kind.RoleWorkload {
		rec.Outputs = k.Outputs
		if rec.Outputs == nil {
			rec.Outputs = results.LoadFiles
		}
	}
	return rec
}

// instanceDir is an instance's output directory in a run: components/<name> or workloads/<name>.
func instanceDir(runDir string, inst Instance) string {
	if k, _ := kind.Lookup(inst.Kind); k != nil && k.Role == kind.RoleWorkload {
		return results.WorkloadDir(runDir, inst.Name)
	}
	return results.ComponentDir(runDir, inst.Name)
}

func (ex *execution) start(ctx context.Context, inst Instance, stdout io.Writer) (platform.Instance, error) {
	k, ok := kind.Lookup(inst.Kind)
	if !ok {
		return nil, fmt.Errorf("%s: unknown kind %q", inst.Name, inst.Kind)
	}
	env := ex.env(inst)
	if err := os.MkdirAll(env.OutDir, 0o755); err != nil {
		return nil, err
	}
	cmd, err := k.Command(env, inst.DecodedConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", inst.Name, err)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = env.OutDir
	}
	if err := placeFiles(dir, cmd.Files); err != nil {
		return nil, fmt.Errorf("%s: %w", inst.Name, err)
	}
	p, err := ex.pf.Start(ctx, platform.InstanceSpec{Name: inst.Name, Node: inst.Node, Args: cmd.Args, Env: cmd.Env, Dir: dir,
		LogDir: filepath.Join(ex.dir, results.LogsDir), DataDirs: cmd.DataDirs, CPUs: cmd.CPUs, Memory: cmd.Memory,
		StopSignal: cmd.StopSignal, Stdout: stdout, Service: inst.service(), Image: cmd.Image})
	if err != nil {
		return nil, err
	}
	ex.envs[inst.Name], ex.procs[inst.Name], ex.kinds[inst.Name], ex.cfgs[inst.Name] = env, p, k, inst.DecodedConfig
	if cmd.StopGrace > 0 {
		ex.graces[inst.Name] = cmd.StopGrace
	}
	probe := ex.readiness(inst, cmd)
	if probe != nil {
		if err := ex.waitReady(ctx, inst, p, cmd.Ready, probe); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// placeFiles writes a command's files (relative paths under dir) before its instance starts.
func placeFiles(dir string, files []kind.File) error {
	for _, f := range files {
		path := f.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("place file %s: %w", f.Path, err)
		}
		if err := os.WriteFile(path, f.Data, mode); err != nil {
			return fmt.Errorf("place file %s: %w", f.Path, err)
		}
		if err := os.Chmod(path, mode); err != nil { // WriteFile keeps an existing file's mode
			return fmt.Errorf("place file %s: %w", f.Path, err)
		}
	}
	return nil
}

// waitReady runs probe until it succeeds, the process exits, the timeout (60 s unless ready
// says; none when it counts retries) passes, ready's retries fail in a row after its start
// period, or ctx ends (Ctrl-C). A try starts ready's interval (else the probe's own) after the
// last one ended, as Docker's health checks do.
func (ex *execution) waitReady(ctx context.Context, inst Instance, p platform.Instance, ready *kind.Ready, probe *readyProbe) error {
	r := kind.Ready{}
	if ready != nil {
		r = *ready
	}
	timeout := 60 * time.Second
	switch {
	case r.Timeout > 0:
		timeout = r.Timeout
	case r.Retries > 0:
		timeout = 0
	}
	start := time.Now()
	deadline := start.Add(timeout)
	failures := 0
	for {
		tried := time.Now()
		err := probe.check(ctx)
		if err == nil {
			return nil
		}
		inStart := tried.Sub(start) < r.StartPeriod
		if !inStart && r.Retries > 0 {
			if failures++; failures >= r.Retries {
				return fmt.Errorf("%s not ready (%s): %d tries in a row failed after its start period of %v (as Docker calls a container unhealthy): %v",
					inst.Name, probe.what, failures, r.StartPeriod, err)
			}
		}
		every := probe.every
		if r.Interval > 0 {
			every = r.Interval
		}
		if r.StartInterval > 0 && time.Since(start) < r.StartPeriod {
			every = r.StartInterval
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
			st := p.Exit()
			return fmt.Errorf("%s exited (code %d %s) before it was ready (%s); see %s", inst.Name, st.Code, st.Signal,
				probe.what, platform.LogPath(filepath.Join(ex.dir, results.LogsDir), inst.Node, inst.Name, "stderr"))
		case <-time.After(every):
		}
		if timeout > 0 && time.Now().After(deadline) {
			return fmt.Errorf("%s not ready (%s) after %v: %v", inst.Name, probe.what, timeout, err)
		}
	}
}

func (ex *execution) run(ctx context.Context) error {
	ex.envs, ex.procs, ex.kinds, ex.cfgs = map[string]kind.Env{}, map[string]platform.Instance{}, map[string]*kind.Kind{}, map[string]any{}
	ex.graces = map[string]time.Duration{}
	defer ex.stopWithGrace()
	for _, c := range ex.sc.Components {
		if c.Deferred {
			continue // a start event starts it
		}
		ex.pr.phase(ex.index, ex.id, "starting "+c.Name)
		if _, err := ex.start(ctx, c, nil); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	samples, err := newSampleWriter(filepath.Join(ex.dir, results.SamplesFile))
	if err != nil {
		return err
	}
	defer samples.close()
	evlog, err := newEventLog(filepath.Join(ex.dir, results.EventsFile))
	if err != nil {
		return err
	}
	defer evlog.close()

	// t0: samplers and workloads start together; events are timed from here.
	t0 := time.Now()
	ex.t0 = t0
	sctx, stopSampler := context.WithCancel(context.Background())
	var swg sync.WaitGroup
	swg.Add(1)
	interval := ex.opts.SampleInterval
	if interval <= 0 {
		interval = time.Second
	}
	var nodes nodesCPU // read once the sampler has stopped
	go func() {
		defer swg.Done()
		ex.pf.Sample(sctx, interval, func(rows []platform.Sample) { nodes.add(rows); samples.write(rows) })
	}()
	defer func() {
		stopSampler()
		swg.Wait()
		ex.fabric = writeNetwork(ex.pf, ex.dir, nodes, ex.opts.Logger)
	}()

	counter := newRequestCounter()
	work := newWorkProgress(ex.sc.Workloads)
	var workloads []platform.Instance
	for _, w := range ex.sc.Workloads {
		ex.pr.phase(ex.index, ex.id, "starting "+w.Name)
		p, err := ex.start(ctx, w, io.MultiWriter(counter.writer(w.Name), work.writer(w)))
		if err != nil {
			return err
		}
		workloads = append(workloads, p)
	}
	ex.pr.running(ex.index, ex.id, t0, ex.sc.Duration.Duration, work.text)
	sched := &scheduler{ex: ex, t0: t0, log: evlog, counter: counter}
	ectx, stopEvents := context.WithCancel(ctx)
	var ewg sync.WaitGroup
	ewg.Add(1)
	go func() { defer ewg.Done(); sched.run(ectx) }()
	defer func() { stopEvents(); ewg.Wait() }()

	// Workloads end on their own after the duration; give them the time their kinds say they
	// may need on top (a load phase, the last requests' timeout, writing outputs), then stop them.
	overrun := ex.overrun()
	deadline := time.NewTimer(ex.sc.Duration.Duration + overrun)
	defer deadline.Stop()
	for _, p := range workloads {
		select {
		case <-p.Done():
		case <-ctx.Done():
			for _, w := range workloads {
				_ = w.Stop(15 * time.Second) // SIGTERM: workloads write what they measured
			}
			return ctx.Err()
		case <-deadline.C:
			for _, w := range workloads {
				_ = w.Stop(15 * time.Second)
			}
			return fmt.Errorf("workloads still running %v after the run's duration (the longest their kinds allow)", overrun)
		}
	}
	var errs []error
	for i, p := range workloads {
		st, w := p.Exit(), ex.sc.Workloads[i]
		if st.Code == loadgen.ExitNothingThrough && w.ExpectFailures {
			ex.pr.note(fmt.Sprintf("run %s: workload %s got nothing through, as its expect_failures allows", ex.id, w.Name))
			continue
		}
		if st.Code == loadgen.ExitNothingThrough {
			errs = append(errs, fmt.Errorf("workload %s got nothing through (every request failed, or none was sent; set expect_failures: true on it if that is the point); see %s",
				w.Name, platform.LogPath(filepath.Join(ex.dir, results.LogsDir), w.Node, w.Name, "stderr")))
			continue
		}
		if st.Code != 0 {
			errs = append(errs, fmt.Errorf("workload %s exited with %d%s; see %s", w.Name, st.Code, st.Signal,
				platform.LogPath(filepath.Join(ex.dir, results.LogsDir), w.Node, w.Name, "stderr")))
		}
	}
	return errors.Join(errs...)
}

// overrun is the longest time past the run's duration any of the run's workloads may need.
func (ex *execution) overrun() time.Duration {
	var d time.Duration
	for _, w := range ex.sc.Workloads {
		k, _ := kind.Lookup(w.Kind)
		d = max(d, k.OverrunOf(w.DecodedConfig))
	}
	return d
}

// trimErr keeps error text on one CSV-friendly line.
func trimErr(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
