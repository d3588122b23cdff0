package orchestrator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// JobSpec is a training job: the user's training and cost configuration (the seed's phase 1).
// Zero values take the defaults of DefaultJob.
type JobSpec struct {
	Strategy plan.Strategy `json:"strategy"`
	// ModelMB is the model's size in MB for the cost model (the seed's 10 MB); Budget is the
	// communication budget per client epoch, in the topology's cost units (the seed's 600).
	ModelMB float64 `json:"model_mb"`
	Budget  float64 `json:"budget"`
	// Epochs and LocalRounds, when set, override the budget rule (the seed's Table 3 runs).
	Epochs      int `json:"epochs,omitempty"`
	LocalRounds int `json:"local_rounds,omitempty"`

	// Stop at whichever comes first: Rounds global rounds, TargetAccuracy of the global model on
	// the test split (0 = none), MaxCost communication units spent (0 = none).
	Rounds         int     `json:"rounds"`
	TargetAccuracy float64 `json:"target_accuracy,omitempty"`
	MaxCost        float64 `json:"max_cost,omitempty"`

	// Partition, when LabelsPerClient is set, generates the clients' data instead of taking
	// their data/<class> features (the seed's pilot experiments).
	Partition

	Dataset   string  `json:"dataset"`
	DataDir   string  `json:"data_dir,omitempty"`
	LR        float64 `json:"lr"`
	BatchSize int     `json:"batch_size"`
	Seed      int64   `json:"seed"`
	// RoundTimeout bounds how long an aggregator waits for a child's update (a partitioned
	// child's connection does not break; its update is then a failure).
	RoundTimeout float64 `json:"round_timeout_s"`
	// MinGain is the mean-KLD improvement a full re-clustering must bring per moved client for
	// a reconfiguration to move clients that the change did not force to move.
	MinGain float64 `json:"min_gain"`
	// Resume starts the global model from the model repository's latest snapshot.
	Resume bool `json:"resume,omitempty"`
}

// Datasets the FL services load.
var Datasets = []string{"digits", "mnist1d", "cifar10"}

// DefaultJob is the seed's configuration on a data set that installs here.
func DefaultJob() JobSpec {
	return JobSpec{Strategy: plan.MinKLD, ModelMB: 10, Budget: 600, Rounds: 20, Dataset: "digits",
		LR: 0.05, BatchSize: 32, Seed: 1, RoundTimeout: 60, MinGain: 0.01}
}

// Validate names the first field out of range and what is allowed.
func (j *JobSpec) Validate() error {
	var errs []string
	if _, err := plan.ParseStrategy(string(j.Strategy)); err != nil {
		errs = append(errs, err.Error())
	}
	if j.ModelMB <= 0 {
		errs = append(errs, fmt.Sprintf("model_mb %v: want > 0", j.ModelMB))
	}
	if j.Budget <= 0 && (j.Epochs == 0 || j.LocalRounds == 0 && j.Strategy != plan.Centralized) {
		errs = append(errs, fmt.Sprintf("budget %v: want > 0 (or set epochs and local_rounds)", j.Budget))
	}
	if j.Epochs < 0 || j.LocalRounds < 0 {
		errs = append(errs, fmt.Sprintf("epochs %d, local_rounds %d: want >= 0 (0 = from the budget rule)", j.Epochs, j.LocalRounds))
	}
	if j.Rounds < 1 {
		errs = append(errs, fmt.Sprintf("rounds %d: want >= 1", j.Rounds))
	}
	if j.TargetAccuracy < 0 || j.TargetAccuracy > 1 {
		errs = append(errs, fmt.Sprintf("target_accuracy %v: want a fraction in [0, 1] (0 = none)", j.TargetAccuracy))
	}
	if j.MaxCost < 0 {
		errs = append(errs, fmt.Sprintf("max_cost %v: want >= 0 (0 = none)", j.MaxCost))
	}
	known := false
	for _, d := range Datasets {
		known = known || d == j.Dataset
	}
	if !known {
		errs = append(errs, fmt.Sprintf("dataset %q: want one of %s", j.Dataset, strings.Join(Datasets, ", ")))
	}
	if j.Dataset == "cifar10" && j.DataDir == "" {
		errs = append(errs, "dataset cifar10: set data_dir to the folder holding its python batches (data_batch_1 ... test_batch)")
	}
	if err := j.Partition.validate(0); err != nil {
		errs = append(errs, err.Error())
	}
	if j.LR <= 0 || j.BatchSize < 1 {
		errs = append(errs, fmt.Sprintf("lr %v, batch_size %d: want > 0 and >= 1", j.LR, j.BatchSize))
	}
	if j.RoundTimeout <= 0 {
		errs = append(errs, fmt.Sprintf("round_timeout_s %v: want > 0", j.RoundTimeout))
	}
	if j.MinGain < 0 {
		errs = append(errs, fmt.Sprintf("min_gain %v: want >= 0", j.MinGain))
	}
	if len(errs) > 0 {
		return errors.New("job: " + strings.Join(errs, "; "))
	}
	return nil
}

func (j *JobSpec) budget() plan.Budget {
	return plan.Budget{ModelMB: j.ModelMB, PerEpoch: j.Budget}
}

// withOverrides applies the job's fixed epochs/local rounds to a planned configuration and
// recomputes its cost per epoch.
func (j *JobSpec) withOverrides(c plan.Config) plan.Config {
	if j.Epochs > 0 {
		c.Epochs = j.Epochs
	}
	if j.LocalRounds > 0 && len(c.Clusters) > 0 {
		c.LocalRounds = j.LocalRounds
	}
	if c.Epochs > 0 && c.LocalRounds > 0 {
		c.CostPerEpoch = (c.GlobalCost + float64(c.LocalRounds)*c.LocalCost) / float64(c.LocalRounds*c.Epochs)
	}
	return c
}
