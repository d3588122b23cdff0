package kinds

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/fl/flcmd"
)

// jobProgress is the fl-job kind's live progress: per job, the last round `fl train` printed
// (round, the global model's accuracy, the communication spent) and how many times the
// orchestrator reconfigured it.
type jobProgress struct {
	rounds map[string]int // the job's round limit, by instance

	mu   sync.Mutex
	jobs map[string]*jobState // guarded by mu
}

type jobState struct {
	round    int
	accuracy string
	spent    float64
	reconfs  int
}

func newJobProgress(cfgs map[string]*JobConfig) kind.Progress {
	p := &jobProgress{rounds: map[string]int{}, jobs: map[string]*jobState{}}
	for name, c := range cfgs {
		p.rounds[name] = c.Rounds
	}
	return p
}

func (p *jobProgress) Line(instance string, line []byte) {
	tl, ok := flcmd.ReadTrainLine(string(line))
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.jobs[instance]
	if j == nil {
		j = &jobState{round: -1}
		p.jobs[instance] = j
	}
	if tl.Reconfigured {
		j.reconfs++
		return
	}
	j.round, j.accuracy, j.spent = tl.Round, tl.Accuracy, tl.Spent
}

// Text is "round 12/1000, accuracy 0.8431, cost spent 5400, reconfigured once" for one job;
// several jobs are each prefixed by their name.
func (p *jobProgress) Text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.jobs))
	for n := range p.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		j := p.jobs[n]
		var t string
		if j.round < 0 {
			t = "no round yet"
		} else {
			t = fmt.Sprintf("round %d/%d, accuracy %s, cost spent %.0f", j.round, p.rounds[n], j.accuracy, j.spent)
		}
		switch j.reconfs {
		case 0:
		case 1:
			t += ", reconfigured once"
		default:
			t += fmt.Sprintf(", reconfigured %d times", j.reconfs)
		}
		if len(p.rounds) > 1 {
			t = n + " " + t
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "; ")
}
