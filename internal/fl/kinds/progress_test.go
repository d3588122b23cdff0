package kinds

import (
	"testing"
)

// TestJobProgress: the fl-job kind's live line follows `fl train`'s output (a real run's
// lines): the last round with its accuracy and cost, against the job's round limit, and the
// reconfigurations so far.
func TestJobProgress(t *testing.T) {
	p := newJobProgress(map[string]*JobConfig{"job": {Rounds: 1000}})
	if got := p.Text(); got != "" {
		t.Errorf("before any line: %q", got)
	}
	for _, l := range []string{
		"job submitted to http://n1:7070: min-kld, budget 600 per epoch, model 10 MB, 1000 rounds, digits",
		"round 0: accuracy -, loss -, cost spent 0",
	} {
		p.Line("job", []byte(l))
	}
	if got, want := p.Text(), "round 0/1000, accuracy -, cost spent 0"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	for _, l := range []string{
		"round 3: accuracy 0.5130, loss 1.4000, cost spent 117500",
		"reconfigured after n9 left in 0.17 s: kept the clusters",
		"round 12: accuracy 0.8942, loss 0.3022, cost spent 435500",
		"reconfigured after n10 joined in 0.29 s: re-clustered",
		"duration 3m20s reached: stopping the job",
	} {
		p.Line("job", []byte(l))
	}
	if got, want := p.Text(), "round 12/1000, accuracy 0.8942, cost spent 435500, reconfigured 2 times"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
