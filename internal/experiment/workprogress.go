package experiment

import (
	"io"
	"strings"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/loadgen"
)

// workProgress is what the run's workloads say about how far they are, for the live line:
// one kind.Progress per workload kind of the run, fed its instances' stdout. The runner knows
// no kind's units; a kind that says nothing of its own (no NewProgress) gets the load engine's
// progress lines counted as plain operations.
type workProgress struct {
	kinds    []string // in the order the scenario first names them
	progress map[string]kind.Progress
}

func newWorkProgress(workloads []Instance) *workProgress {
	wp := &workProgress{progress: map[string]kind.Progress{}}
	cfgs := map[string]map[string]any{}
	for _, w := range workloads {
		if cfgs[w.Kind] == nil {
			cfgs[w.Kind] = map[string]any{}
			wp.kinds = append(wp.kinds, w.Kind)
		}
		cfgs[w.Kind][w.Name] = w.DecodedConfig
	}
	for _, name := range wp.kinds {
		if k, ok := kind.Lookup(name); ok && k.NewProgress != nil {
			wp.progress[name] = k.NewProgress(cfgs[name])
			continue
		}
		wp.progress[name] = loadgen.Follow(func(t loadgen.ProgressLine) string {
			return loadgen.CountsText(t.ThroughputRPS, t.Sent, t.Errors, "ops")
		})
	}
	return wp
}

// writer is the stdout sink of workload inst: every line goes to its kind's progress.
func (wp *workProgress) writer(inst Instance) io.Writer {
	p := wp.progress[inst.Kind]
	return &lineParser{onLine: func(line []byte) { p.Line(inst.Name, line) }}
}

// text is the workloads' progress: one kind's text alone, several as "kind: text" each, in the
// scenario's order; "" while none has anything to say.
func (wp *workProgress) text() string {
	var parts []string
	for _, name := range wp.kinds {
		t := wp.progress[name].Text()
		if t == "" {
			continue
		}
		if len(wp.kinds) > 1 {
			t = name + ": " + t
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "   ")
}
