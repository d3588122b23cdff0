package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
)

// CheckResult is what Check found valid.
type CheckResult struct {
	Scenario string
	Runs     int // sweep combinations x repeats (those Options.Select picks)
	// WallTime estimates how long the runs take: their durations plus RunOverhead each.
	WallTime time.Duration
	// Duration is every run's duration when they share one (0 when a sweep varies it).
	Duration time.Duration
	// Instances is the number of instances one run starts (components and workloads).
	Instances int
}

// Check validates a scenario the way Execute would, without starting anything: it loads it
// with the --set overrides, expands every sweep combination, has opts.Platform check what every
// run asks of it, and builds the command line of
// every instance of every run (which is where kinds check what involves other instances, such
// as cluster members or the component a workload drives). opts.Repeats overrides the
// scenario's repeats as in Execute; opts.Binary defaults to this executable.
func Check(path string, opts Options) (*CheckResult, error) {
	sc, runs, err := loadRuns(path, opts)
	if err != nil {
		return nil, err
	}
	if opts.Binary == "" {
		if opts.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	// Kinds may write files next to their command (the proxy's configuration): into a
	// scratch directory that goes away.
	tmp, err := os.MkdirTemp("", "continuum-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var errs []error
	seen := map[string]bool{}
	for _, r := range runs {
		for _, inst := range append(append([]Instance{}, r.Scenario.Components...), r.Scenario.Workloads...) {
			cmd, err := dryCommand(r.Scenario, inst, filepath.Join(tmp, r.ID), opts)
			if ic, ok := opts.Platform.(platform.InstanceChecker); ok && err == nil {
				// The platform refuses what it cannot run as specified (a limit, an image).
				err = ic.CheckInstance(platform.InstanceSpec{Name: inst.Name, Node: inst.Node, Args: cmd.Args, Env: cmd.Env,
					Dir: cmd.Dir, DataDirs: cmd.DataDirs, CPUs: cmd.CPUs, Memory: cmd.Memory, StopSignal: cmd.StopSignal,
					Service: inst.service(), Image: cmd.Image})
			}
			if err != nil {
				msg := fmt.Sprintf("%s: %v", inst.Name, err)
				if len(r.Params) > 0 {
					msg = fmt.Sprintf("run %s (%s): %s", r.ID, paramText(sortedParams(r.Params), r.Params, r.Labels), msg)
				}
				if !seen[msg] {
					seen[msg] = true
					errs = append(errs, errors.New(msg))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := &CheckResult{Scenario: sc.Name, Runs: len(runs), WallTime: wallTime(runs)}
	if len(runs) > 0 {
		res.Duration = runs[0].Scenario.Duration.Duration
		for _, r := range runs {
			if r.Scenario.Duration.Duration != res.Duration {
				res.Duration = 0
			}
		}
		res.Instances = len(runs[0].Scenario.Components) + len(runs[0].Scenario.Workloads)
	}
	return res, nil
}

// Summary is what Check found in a line: "scenario kv-partition: 2 run(s) of 5 instance(s), about
// 56s (2 x (25s + ~3s start/stop))".
func (r *CheckResult) Summary() string {
	s := fmt.Sprintf("scenario %s: %d run(s) of %d instance(s), about %v", r.Scenario, r.Runs, r.Instances, r.WallTime.Round(time.Second))
	if r.Duration > 0 {
		s += fmt.Sprintf(" (%d x (%v + ~%v start/stop))", r.Runs, r.Duration, RunOverhead)
	} else {
		s += fmt.Sprintf(" (the runs' durations + ~%v start/stop each)", RunOverhead)
	}
	return s
}

// dryCommand is the command inst would run in a run of sc, built against node names instead of
// the platform's addresses (every node resolves the names, so the command is the same but for
// the addresses it advertises) and against the endpoint of a platform named "check".
func dryCommand(sc *Scenario, inst Instance, runDir string, opts Options) (kind.Command, error) {
	k, ok := kind.Lookup(inst.Kind)
	if !ok {
		return kind.Command{}, fmt.Errorf("unknown kind %q", inst.Kind)
	}
	env := instanceEnv(sc, inst, nil, runDir, opts.Binary, opts.Platform.Endpoint("check"))
	if err := os.MkdirAll(env.OutDir, 0o755); err != nil {
		return kind.Command{}, err
	}
	return k.Command(env, inst.DecodedConfig)
}

// DryCommands returns, for every run of the scenario at path and every instance in it, the
// command line a run would start (see Check), keyed "<run id>/<instance>". For tests that hold
// kinds to what the binary accepts. Files kinds write go under dir; opts gives the platform and
// the binary.
func DryCommands(path, dir string, opts Options) (map[string][]string, error) {
	_, runs, err := loadRuns(path, opts)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range runs {
		for _, inst := range append(append([]Instance{}, r.Scenario.Components...), r.Scenario.Workloads...) {
			cmd, err := dryCommand(r.Scenario, inst, filepath.Join(dir, r.ID), opts)
			if err != nil {
				return nil, fmt.Errorf("run %s: %s: %w", r.ID, inst.Name, err)
			}
			out[r.ID+"/"+inst.Name] = cmd.Args
		}
	}
	return out, nil
}

func sortedParams(p map[string]string) []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Stacks lists the setup stacks (kind.Kind.Stacks) the runs of the scenario at path need, in
// name order: what `continuum run` makes sure is installed before it starts anything.
func Stacks(path string, opts Options) ([]string, error) {
	_, runs, err := loadRuns(path, opts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for _, inst := range append(append([]Instance{}, r.Scenario.Components...), r.Scenario.Workloads...) {
			k, ok := kind.Lookup(inst.Kind)
			if !ok {
				continue // loadRuns has refused unknown kinds already
			}
			for _, s := range k.Stacks {
				if !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
