package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func yamlValues(t *testing.T, src string) []yaml.Node {
	t.Helper()
	var vs []yaml.Node
	if err := yaml.Unmarshal([]byte(src), &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestDeriveLabels(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		want         []string
	}{
		{"scalars name themselves", `[qos, round-robin]`, nil},
		{"stores compared", `[[{name: m1, kind: kv}, {name: m2, kind: kv}], [{name: m1, kind: etcd}, {name: m2, kind: etcd}]]`,
			[]string{"kv", "etcd"}},
		{"cluster sizes", `[[{name: m1, kind: kv}], [{name: m1, kind: kv}, {name: m2, kind: kv}, {name: m3, kind: kv}]]`,
			[]string{"1×kv", "3×kv"}},
		{"mixed kinds", `[[{kind: kv}, {kind: proxy}], [{kind: etcd}, {kind: proxy}]]`, []string{"kv+proxy", "etcd+proxy"}},
		{"one setting differs", `[[{kind: kv, config: {linger: 0s}}, {kind: kv, config: {linger: 0s}}], [{kind: kv, config: {linger: 3ms}}, {kind: kv, config: {linger: 3ms}}]]`,
			[]string{"kv linger=0s", "kv linger=3ms"}},
		{"a mapping per value", `[{kind: kv, node: a}, {kind: etcd, node: a}]`, []string{"kv", "etcd"}},
		{"no kinds", `[{a: 1, b: 2}, {a: 1, b: 3}]`, []string{"b=2", "b=3"}},
		{"a field only one value sets", `[{kind: kv}, {kind: kv, linger: 3ms}]`, []string{"kv", "kv linger=3ms"}},
		{"too long to tell apart", `[{x: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}, {x: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb}]`,
			[]string{"#1", "#2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deriveLabels(yamlValues(t, tc.values)); !slices.Equal(got, tc.want) {
				t.Errorf("labels %q, want %q", got, tc.want)
			}
		})
	}
}

// Runs carry the label of each swept value: given ones first, derived ones otherwise; bad
// sweep_labels are errors that say what is allowed.
func TestSweepLabelsInRuns(t *testing.T) {
	const base = `version: 1
name: labels
duration: 3s
topology: {nodes: [{name: n1}]}
components: []
workloads:
  - {name: load, kind: http-load, node: n1, config: {rate: 10, targets: [{name: e, component: e}]}}
sweep:
  workloads.load.config.rate: [10, 20]
  components:
    - [{name: e, kind: http-echo, node: n1, config: {port: 8080}}]
    - [{name: e, kind: http-echo, node: n1, config: {port: 8080, delay: 5ms}}]
`
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sc, err := LoadScenario(write("derived.yaml", base), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sc.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 || runs[0].Labels["components"] != "http-echo" || runs[2].Labels["components"] != "http-echo delay=5ms" {
		var got []string
		for _, r := range runs {
			got = append(got, r.Labels["components"])
		}
		t.Errorf("derived labels %q", got)
	}
	if _, ok := runs[0].Labels["workloads.load.config.rate"]; ok {
		t.Errorf("a scalar got a label: %v", runs[0].Labels)
	}

	sc, err = LoadScenario(write("given.yaml", base+"sweep_labels:\n  components: [plain, slow]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs, err = sc.Expand(); err != nil || runs[0].Labels["components"] != "plain" || runs[3].Labels["components"] != "slow" {
		t.Errorf("given labels: %v %v", runs, err)
	}
	for _, tc := range []struct{ labels, want string }{
		{"components: [one]", "1 labels for 2 values"},
		{"components: [a, a]", `label "a" is given twice`},
		{"rate: [a, b]", "sweep_labels rate: not a sweep path; swept paths: components, workloads.load.config.rate"},
		{"components: [a, '']", "label 2 is empty"},
	} {
		_, err := LoadScenario(write("bad.yaml", base+"sweep_labels:\n  "+tc.labels+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sweep_labels %s: err = %v, want %q", tc.labels, err, tc.want)
		}
	}
}
