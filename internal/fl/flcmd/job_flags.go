package flcmd

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/fl/orchestrator"
	"github.com/continuum-project/continuum/internal/fl/plan"
)

// JobFlags are a training job's flags (`fl train`, `fl orchestrate --train`); the fl-job kind
// renders its command line from the same struct.
type JobFlags struct {
	Job orchestrator.JobSpec
}

// DefaultJobFlags are orchestrator.DefaultJob's values.
func DefaultJobFlags() JobFlags { return JobFlags{Job: orchestrator.DefaultJob()} }

// Bind declares the job's flags on fs.
func (f *JobFlags) Bind(fs *pflag.FlagSet) {
	j := &f.Job
	fs.StringVar((*string)(&j.Strategy), "strategy", string(j.Strategy), "configuration strategy: "+strategies()+" (label-sorted: the seed's non-IID clusters, a baseline)")
	fs.Float64Var(&j.ModelMB, "model-mb", j.ModelMB, "model size in MB for the cost model (the seed's 10)")
	fs.Float64Var(&j.Budget, "budget", j.Budget, "communication budget per client epoch, in the topology's cost units (the seed's 600)")
	fs.IntVar(&j.Epochs, "epochs", j.Epochs, "local epochs per local round (0: the budget rule's)")
	fs.IntVar(&j.LocalRounds, "local-rounds", j.LocalRounds, "local aggregations per global round (0: the budget rule's)")
	fs.IntVar(&j.Rounds, "rounds", j.Rounds, "stop after this many global rounds")
	fs.Float64Var(&j.TargetAccuracy, "target-accuracy", j.TargetAccuracy, "stop once the global model's test accuracy reaches this fraction (0: no target)")
	fs.Float64Var(&j.MaxCost, "max-cost", j.MaxCost, "stop once this much communication (cost units) is spent (0: no limit)")
	fs.StringVar(&j.Dataset, "dataset", j.Dataset, "data set: digits, mnist1d or cifar10 (cifar10 needs --data-dir)")
	fs.StringVar(&j.DataDir, "data-dir", j.DataDir, "folder of the data set's files (cifar10: its python batches)")
	fs.IntVar(&j.LabelsPerClient, "labels-per-client", j.LabelsPerClient, "generate the clients' data: this many classes each, in equal shares (0: the nodes' data/<class> features)")
	fs.IntVar(&j.Splits, "splits", j.Splits, "with --labels-per-client: cut the training data into this many equal parts, one per client (0: one per client)")
	fs.Float64Var(&j.LR, "lr", j.LR, "clients' SGD learning rate")
	fs.IntVar(&j.BatchSize, "batch-size", j.BatchSize, "clients' batch size")
	fs.Int64Var(&j.Seed, "seed", j.Seed, "seed of the data split, the model's initial weights and the clients' failures")
	fs.Float64Var(&j.RoundTimeout, "round-timeout", j.RoundTimeout, "seconds an aggregator waits for a child's update before counting it failed")
	fs.Float64Var(&j.MinGain, "min-gain", j.MinGain, "mean-KLD gain per moved client a re-clustering must bring on a node change")
	fs.BoolVar(&j.Resume, "resume", j.Resume, "start from the model repository's latest snapshot")
}

func strategies() string {
	names := make([]string, len(plan.Strategies))
	for i, s := range plan.Strategies {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
