package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestNodesFromLabels(t *testing.T) {
	n, err := NodesFromLabels("n4", map[string]string{
		"fl/type": "client", "comm/n1": "200", "comm/n2": "100", "data/0": "1000", "data/2": "20000",
		"kubernetes.io/hostname": "n4", "tier": "edge",
	})
	if err != nil {
		t.Fatal(err)
	}
	if n.Role != RoleClient || n.Cost["n1"] != 200 || n.Cost["n2"] != 100 || n.Data[0] != 1000 || n.Data[2] != 20000 || len(n.Cost) != 2 || len(n.Data) != 2 {
		t.Errorf("%+v", n)
	}
	for label, want := range map[string]Role{"local_aggregator": RoleAggregator, "aggregator": RoleAggregator, "global_aggregator": RoleGlobal, "global": RoleGlobal} {
		n, err := NodesFromLabels("x", map[string]string{"fl/type": label})
		if err != nil || n.Role != want {
			t.Errorf("fl/type=%s: %v %v", label, n.Role, err)
		}
	}
	if _, err := NodesFromLabels("x", map[string]string{"tier": "edge"}); !errors.Is(err, ErrNoRole) {
		t.Errorf("no fl/type: %v, want ErrNoRole", err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"fl/type": "boss"}, `node x: label fl/type: role "boss": want client, aggregator`},
		{map[string]string{"fl/type": "client", "comm/n1": "cheap"}, `node x: label comm/n1: cost "cheap" to n1: want a number >= 0`},
		{map[string]string{"fl/type": "client", "comm/n1": "-3"}, `cost "-3" to n1`},
		{map[string]string{"fl/type": "client", "comm/x": "3"}, "a cost to itself"},
		{map[string]string{"fl/type": "client", "comm/": "3"}, "empty peer name"},
		{map[string]string{"fl/type": "client", "data/cat": "3"}, `node x: label data/cat: class "cat": want an integer in [0, 65536)`},
		{map[string]string{"fl/type": "client", "data/1": "many"}, `sample count "many" of class 1: want an integer >= 0`},
	} {
		_, err := NodesFromLabels("x", tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.labels, err, tc.want)
		}
	}
}

func TestParseCSV(t *testing.T) {
	nodes, err := ParseCSV(strings.NewReader(`id,role,costs,data
# the global aggregator
n1,global_aggregator,,
n2,local_aggregator,"n1:100"

n4,client,"n1:200, n2:50","0:1000,1:10000"
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0].Role != RoleGlobal || nodes[1].Role != RoleAggregator || nodes[2].Cost["n2"] != 50 || nodes[2].Data[1] != 10000 {
		t.Errorf("%+v", nodes)
	}
	for _, tc := range []struct{ in, want string }{
		{"n1,global\nn1,client", "line 2: node n1 already defined on line 1"},
		{"n1,boss", `line 1: node n1: role "boss": want client, aggregator`},
		{"n1,global\nn2,client,\"n1=100\"", `line 2: node n2: cost "n1=100": want peer:cost`},
		{"n1,global\nn2,client,n1:x", `cost "x" to n1: want a number >= 0`},
		{"n1,global\nn2,client,n1:1,\"0=1\"", `data "0=1": want class:count`},
		{"n1,global\nn2,client,n1:1,\"0:-1\"", `sample count "-1" of class 0`},
		{"n1,global,,,extra", "line 1: 5 fields"},
		{",client", "line 1: empty node id"},
		{"n1", "line 1: 1 fields"},
		{"n1,\"global", "topology csv"},
	} {
		_, err := ParseCSV(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseCSV(f *testing.F) {
	f.Add("n1,global,,\nn2,aggregator,\"n1:100\",\nn4,client,\"n1:200,n2:100\",\"0:1000,1:10000\"\n")
	f.Add("id,role\n# x\nn1,client,n1:3")
	f.Add("n1,global,\"n2:1e308\",\"65535:9\"\nn2,client,\"n1:0\",\"0:0\"")
	f.Fuzz(func(t *testing.T, in string) {
		nodes, err := ParseCSV(strings.NewReader(in))
		if err != nil {
			return
		}
		ids := map[string]bool{}
		for _, n := range nodes {
			if n.ID == "" || ids[n.ID] {
				t.Fatalf("empty or duplicate id %q", n.ID)
			}
			ids[n.ID] = true
			if n.Role != RoleClient && n.Role != RoleAggregator && n.Role != RoleGlobal {
				t.Fatalf("role %q", n.Role)
			}
		}
		for _, n := range nodes {
			for p, c := range n.Cost {
				if p == "" || p == n.ID || c < 0 {
					t.Fatalf("node %s: cost %v to %q", n.ID, c, p)
				}
			}
			for cl, v := range n.Data {
				if cl < 0 || v < 0 {
					t.Fatalf("node %s: data %d:%d", n.ID, cl, v)
				}
			}
		}
		// Whatever parses, planning it either works or fails with an error, never a panic.
		_, _ = Plan(nodes, MinKLD, DefaultBudget(), DefaultOptions())
		_, _ = Plan(nodes, MinCost, DefaultBudget(), DefaultOptions())
	})
}
