package experiment

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/results"
)

type countingConfig struct {
	Unit string `yaml:"unit"`
}

// countingProgress counts the lines each instance wrote that start with its config's unit.
type countingProgress struct {
	cfgs map[string]*countingConfig
	mu   sync.Mutex
	n    map[string]int
}

func (p *countingProgress) Line(inst string, line []byte) {
	if strings.HasPrefix(string(line), p.cfgs[inst].Unit) {
		p.mu.Lock()
		p.n[inst]++
		p.mu.Unlock()
	}
}

func (p *countingProgress) Text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for inst, n := range p.n {
		parts = append(parts, fmt.Sprintf("%s %d %ss", inst, n, p.cfgs[inst].Unit))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func init() {
	kind.Register(kind.Def[countingConfig]{
		Name: "test-counting", Role: kind.RoleWorkload,
		Defaults: func() *countingConfig { return &countingConfig{Unit: "round"} },
		Command:  trueCommand[countingConfig],
		Progress: func(cfgs map[string]*countingConfig) kind.Progress {
			return &countingProgress{cfgs: cfgs, n: map[string]int{}}
		},
		Outputs: []string{"job.json"},
	})
}

// TestWorkProgress: each kind says its own progress from its instances' stdout (its Progress
// gets every instance's config), a kind that says nothing of its own has the load engine's
// lines counted as operations, a lone kind's text stands alone and several are named, and the
// line is empty until a workload has something to say.
func TestWorkProgress(t *testing.T) {
	ws := []Instance{
		{Name: "a", Kind: "test-counting", DecodedConfig: &countingConfig{Unit: "round"}},
		{Name: "b", Kind: "test-counting", DecodedConfig: &countingConfig{Unit: "epoch"}},
	}
	wp := newWorkProgress(ws)
	if got := wp.text(); got != "" {
		t.Errorf("text before any output = %q, want empty", got)
	}
	write := func(w io.Writer, lines ...string) {
		for _, l := range lines {
			if _, err := io.WriteString(w, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(wp.writer(ws[0]), "round 1", "round 2", `{"type":"progress","t_s":1,"sent":5}`)
	write(wp.writer(ws[1]), "epoch 1", "round 9")
	if got, want := wp.text(), "a 2 rounds, b 1 epochs"; got != want {
		t.Errorf("one kind: text = %q, want %q", got, want)
	}

	ws = append(ws, Instance{Name: "load", Kind: "fake-load", DecodedConfig: &struct{}{}})
	wp = newWorkProgress(ws)
	write(wp.writer(ws[0]), "round 1")
	write(wp.writer(ws[2]), `{"type":"progress","t_s":1,"sent":40,"ok":39,"errors":1,"throughput_rps":39,"series":{}}`)
	if got, want := wp.text(), "test-counting: a 1 rounds   fake-load: 39 ops/s  sent 40, 1 failed (2.5%)"; got != want {
		t.Errorf("two kinds: text = %q, want %q", got, want)
	}
}

// TestInstanceRecordOutputs: run.json records the files a workload's kind says it writes, the
// load engine's when it does not say, and none for a component.
func TestInstanceRecordOutputs(t *testing.T) {
	for _, tc := range []struct {
		inst Instance
		want []string
	}{
		{Instance{Name: "job", Kind: "test-counting"}, []string{"job.json"}},
		{Instance{Name: "load", Kind: "fake-load"}, results.LoadFiles},
		{Instance{Name: "srv", Kind: "fake-server"}, nil},
	} {
		if got := instanceRecord(tc.inst).Outputs; !slices.Equal(got, tc.want) {
			t.Errorf("%s (%s): outputs %q, want %q", tc.inst.Name, tc.inst.Kind, got, tc.want)
		}
	}
}
