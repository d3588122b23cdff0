package kinds

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/fl/flcmd"
	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/results"
)

func init() {
	kind.Register(kind.Def[JobConfig]{
		Name:     "fl-job",
		System:   "fl",
		Role:     kind.RoleWorkload,
		Summary:  "a federated-learning training job (training and cost configuration) submitted to an fl-orchestrator; ends when the job reaches its target",
		Defaults: defaultJobConfig,
		Validate: (*JobConfig).validate,
		Command:  jobCommand,
		Overrun: func(c *JobConfig) time.Duration {
			return time.Duration(c.RoundTimeout*float64(time.Second)) + time.Minute
		},
		Progress: newJobProgress,
		// The job's final status; it measures no requests (no stats.json or time series).
		Outputs: []string{flcmd.JobFile},
	})
}

// JobConfig is the `config:` of an fl-job workload: the orchestrator component and the job
// (orchestrator.JobSpec's fields; unset ones take its defaults: min-kld, 10 MB, budget 600,
// 20 rounds, digits).
type JobConfig struct {
	Orchestrator   string  `yaml:"orchestrator"` // the fl-orchestrator component (required)
	Strategy       string  `yaml:"strategy"`
	ModelMB        float64 `yaml:"model_mb"`
	Budget         float64 `yaml:"budget"`
	Epochs         int     `yaml:"epochs"`
	LocalRounds    int     `yaml:"local_rounds"`
	Rounds         int     `yaml:"rounds"`
	TargetAccuracy float64 `yaml:"target_accuracy"`
	MaxCost        float64 `yaml:"max_cost"`
	// LabelsPerClient and Splits generate the clients' data (the seed's pilot experiments).
	LabelsPerClient int     `yaml:"labels_per_client"`
	Splits          int     `yaml:"splits"`
	Dataset         string  `yaml:"dataset"`
	DataDir         string  `yaml:"data_dir"`
	LR              float64 `yaml:"lr"`
	BatchSize       int     `yaml:"batch_size"`
	Seed            int64   `yaml:"seed"`
	RoundTimeout    float64 `yaml:"round_timeout"` // seconds
	MinGain         float64 `yaml:"min_gain"`
	Resume          bool    `yaml:"resume"`
}

func defaultJobConfig() *JobConfig {
	d := orchestrator.DefaultJob()
	return &JobConfig{Strategy: string(d.Strategy), ModelMB: d.ModelMB, Budget: d.Budget, Rounds: d.Rounds, Dataset: d.Dataset,
		LR: d.LR, BatchSize: d.BatchSize, Seed: d.Seed, RoundTimeout: d.RoundTimeout, MinGain: d.MinGain}
}

func (c *JobConfig) spec() orchestrator.JobSpec {
	return orchestrator.JobSpec{Strategy: plan.Strategy(c.Strategy), ModelMB: c.ModelMB, Budget: c.Budget, Epochs: c.Epochs,
		LocalRounds: c.LocalRounds, Rounds: c.Rounds,
		Partition: orchestrator.Partition{LabelsPerClient: c.LabelsPerClient, Splits: c.Splits}, TargetAccuracy: c.TargetAccuracy, MaxCost: c.MaxCost, Dataset: c.Dataset,
		DataDir: c.DataDir, LR: c.LR, BatchSize: c.BatchSize, Seed: c.Seed, RoundTimeout: c.RoundTimeout, MinGain: c.MinGain, Resume: c.Resume}
}

// jobKeys maps a JobSpec field (its JSON key) to the fl-job key and the `continuum fl train`
// flag it becomes.
var jobKeys = map[string][2]string{
	"strategy": {"strategy", "--strategy"}, "model_mb": {"model_mb", "--model-mb"}, "budget": {"budget", "--budget"},
	"epochs": {"epochs", "--epochs"}, "local_rounds": {"local_rounds", "--local-rounds"}, "rounds": {"rounds", "--rounds"},
	"target_accuracy": {"target_accuracy", "--target-accuracy"}, "max_cost": {"max_cost", "--max-cost"},
	"labels_per_client": {"labels_per_client", "--labels-per-client"}, "splits": {"splits", "--splits"},
	"dataset": {"dataset", "--dataset"}, "data_dir": {"data_dir", "--data-dir"}, "lr": {"lr", "--lr"},
	"batch_size": {"batch_size", "--batch-size"}, "seed": {"seed", "--seed"}, "round_timeout_s": {"round_timeout", "--round-timeout"},
	"min_gain": {"min_gain", "--min-gain"}, "resume": {"resume", "--resume"},
}

// validate reports every problem at once: the job's (orchestrator.JobSpec.Problems), each at
// its key with the `continuum fl train` flag it becomes.
func (c *JobConfig) validate() error {
	var errs kind.FieldErrors
	if c.Orchestrator == "" {
		errs.Add("orchestrator", "--orchestrator", "required: the fl-orchestrator component to submit the job to")
	}
	s := c.spec()
	for _, p := range s.Problems() {
		k, ok := jobKeys[p.Field]
		if !ok {
			k = [2]string{p.Field, ""}
		}
		errs.Add(k[0], k[1], "%s", p.Msg)
	}
	return errs.Err()
}

func jobCommand(env kind.Env, c *JobConfig) (kind.Command, error) {
	api, err := env.Store(c.Orchestrator, 0, kind.ProtocolHTTP)
	if err != nil {
		return kind.Command{}, fmt.Errorf("orchestrator: %w", err)
	}
	if api.Kind != "fl-orchestrator" {
		return kind.Command{}, fmt.Errorf("orchestrator %q is a %s component, not an fl-orchestrator", c.Orchestrator, api.Kind)
	}
	f := flcmd.DefaultTrainFlags()
	f.Orchestrator, f.Out, f.Duration = api.Addr, env.OutDir, env.Duration
	// The orchestrator generates its API token into its output directory, a component's
	// directory of the same run (results.ComponentDir), before it listens: the job starts after.
	runDir := filepath.Dir(filepath.Dir(env.OutDir))
	f.TokenFile = flcmd.TokenFile(results.ComponentDir(runDir, c.Orchestrator))
	f.Job = c.spec()
	return kind.Command{Args: append([]string{env.Binary, "fl", "train"}, cli.Args(flcmd.DefaultTrainFlags(), f)...)}, nil
}
