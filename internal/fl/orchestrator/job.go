package orchestrator

import (
	"errors"
	"fmt"
	"slices"
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

// FieldError is a problem with one field of a JobSpec, named by its JSON key, so that a caller
// that takes the job in another form (the fl-job kind's YAML keys, fl train's flags) can say
// where the value came from.
type FieldError struct {
	Field string // the JSON key: "model_mb", "labels_per_client"
	Msg   string // the value and what is allowed: "0: want > 0"
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

func fieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Problems lists every field out of range, each with what is allowed; none: the job is valid.
func (j *JobSpec) Problems() []*FieldError {
	var ps []*FieldError
	if _, err := plan.ParseStrategy(string(j.Strategy)); err != nil {
		names := make([]string, len(plan.Strategies))
		for i, st := range plan.Strategies {
			names[i] = string(st)
		}
		ps = append(ps, fieldErrorf("strategy", "%q: want one of %s", j.Strategy, strings.Join(names, ", ")))
	}
	if j.ModelMB <= 0 {
		ps = append(ps, fieldErrorf("model_mb", "%v: want > 0", j.ModelMB))
	}
	if j.Budget <= 0 && (j.Epochs == 0 || j.LocalRounds == 0 && j.Strategy != plan.Centralized) {
		ps = append(ps, fieldErrorf("budget", "%v: want > 0 (or set epochs and local_rounds)", j.Budget))
	}
	if j.Epochs < 0 {
		ps = append(ps, fieldErrorf("epochs", "%d: want >= 0 (0 = from the budget rule)", j.Epochs))
	}
	if j.LocalRounds < 0 {
		ps = append(ps, fieldErrorf("local_rounds", "%d: want >= 0 (0 = from the budget rule)", j.LocalRounds))
	}
	if j.Rounds < 1 {
		ps = append(ps, fieldErrorf("rounds", "%d: want >= 1", j.Rounds))
	}
	if j.TargetAccuracy < 0 || j.TargetAccuracy > 1 {
		ps = append(ps, fieldErrorf("target_accuracy", "%v: want a fraction in [0, 1] (0 = none)", j.TargetAccuracy))
	}
	if j.MaxCost < 0 {
		ps = append(ps, fieldErrorf("max_cost", "%v: want >= 0 (0 = none)", j.MaxCost))
	}
	if !slices.Contains(Datasets, j.Dataset) {
		ps = append(ps, fieldErrorf("dataset", "%q: want one of %s", j.Dataset, strings.Join(Datasets, ", ")))
	}
	if j.Dataset == "cifar10" && j.DataDir == "" {
		ps = append(ps, fieldErrorf("data_dir", "unset: dataset cifar10 needs the folder holding its python batches (data_batch_1 ... test_batch)"))
	}
	var fe *FieldError
	if err := j.Partition.validate(0); errors.As(err, &fe) {
		ps = append(ps, fe)
	}
	if j.LR <= 0 {
		ps = append(ps, fieldErrorf("lr", "%v: want > 0", j.LR))
	}
	if j.BatchSize < 1 {
		ps = append(ps, fieldErrorf("batch_size", "%d: want >= 1", j.BatchSize))
	}
	if j.RoundTimeout <= 0 {
		ps = append(ps, fieldErrorf("round_timeout_s", "%v: want > 0", j.RoundTimeout))
	}
	if j.MinGain < 0 {
		ps = append(ps, fieldErrorf("min_gain", "%v: want >= 0", j.MinGain))
	}
	return ps
}

// Validate names every field out of range and what is allowed.
func (j *JobSpec) Validate() error {
	ps := j.Problems()
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return errors.New("job: " + strings.Join(msgs, "; "))
}

func (j *JobSpec) budget() plan.Budget {
	b := plan.Budget{ModelMB: j.ModelMB, PerEpoch: j.Budget}
	if j.Epochs > 0 && (j.LocalRounds > 0 || j.Strategy == plan.Centralized) {
		// Fixed epochs and local rounds: the budget rule's choice is replaced anyway, so the
		// budget must not make the configuration fail.
		b.PerEpoch = 1e300
	}
	return b
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
