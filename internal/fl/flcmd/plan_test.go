package flcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

const seedCSV = "../../../scenarios/fl/seed-topology.csv"

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c := newPlanCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	err := c.Execute()
	return out.String(), err
}

func TestPlanSeed(t *testing.T) {
	out, err := run(t, "--topology", seedCSV)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Optimal clusters: [n5 n6 n7] [n4 n8 n9]", "Best KLD: 0.22441057019914015", "Epochs: 8", "Local rounds: 7", "n9  parent n3  epochs 8"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanRemoveJSON(t *testing.T) {
	out, err := run(t, "--topology", seedCSV, "--remove", "n9", "--min-gain", "0", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Before, After plan.Config
		Change        plan.Change
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if v.Before.KLD != 0.22441057019914015 || v.After.KLD != 0.37967447155304745 || !v.Change.Reoptimized {
		t.Errorf("before %v after %v change %+v", v.Before.KLD, v.After.KLD, v.Change)
	}
}

func TestPlanAddAndYAML(t *testing.T) {
	dir := t.TempDir()
	// A scenario whose topology carries the seed's Kubernetes-style labels.
	scenario := `name: fl-labels
topology:
  nodes:
    - {name: n1, labels: {fl/type: global_aggregator}}
    - {name: n2, labels: {fl/type: local_aggregator, comm/n1: "100"}}
    - {name: n3, labels: {fl/type: local_aggregator, comm/n1: "100"}}
    - {name: n4, cpus: 0.5, labels: {fl/type: client, comm/n1: "200", comm/n2: "100", comm/n3: "50", data/0: "1000", data/1: "10000", data/2: "20000"}}
    - {name: n5, labels: {fl/type: client, comm/n1: "200", comm/n2: "100", comm/n3: "100", data/3: "1000", data/4: "10000", data/5: "20000"}}
    - {name: n6, labels: {fl/type: client, comm/n1: "200", comm/n2: "100", comm/n3: "100", data/6: "1000", data/7: "10000", data/8: "20000"}}
    - {name: n7, labels: {fl/type: client, comm/n1: "200", comm/n2: "50", comm/n3: "100", data/0: "1000", data/4: "10000", data/9: "20000"}}
    - {name: n8, labels: {fl/type: client, comm/n1: "200", comm/n2: "100", comm/n3: "100", data/0: "1000", data/4: "10000", data/9: "20000"}}
    - {name: n9, labels: {fl/type: client, comm/n1: "200", comm/n2: "100", comm/n3: "50", data/1: "1000", data/5: "10000", data/7: "20000"}}
    - {name: cloud}
components: []
`
	sc := filepath.Join(dir, "fl.yaml")
	add := filepath.Join(dir, "join.csv")
	if err := os.WriteFile(sc, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(add, []byte(`n10,client,"n1:200,n2:100,n3:100","2:5000,3:5000"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--topology", sc, "--add", add)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Best KLD: 0.22441057019914015", "moved n10: (joined) -> ", "Reconfiguration: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology", seedCSV, "--strategy", "best"}, `--strategy: strategy "best": want one of centralized, min-kld, min-cost`},
		{[]string{"--topology", "nodes.txt"}, "want a .csv file"},
		{[]string{"--topology", seedCSV, "--remove", "n99"}, "--remove n99: no such node"},
		{[]string{"--topology", seedCSV, "--budget", "1"}, "budget 1 per epoch is unreachable"},
		{[]string{}, `required flag(s) "topology" not set`},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
