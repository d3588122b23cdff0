package testbed

import (
	"testing"
	"time"
)

func TestPublishLoad(t *testing.T) {
	a, b := &node{name: "a", cpus: 0.5, memory: 100 << 20}, &node{name: "b"}
	tb := &Testbed{byName: map[string]*node{"a": a, "b": b}}
	at := time.Now()
	tb.publishLoad(at, []Sample{
		{Node: "a", CPUUtil: 0.25, RSS: 50 << 20},
		{Node: "a", Component: "x", CPUUtil: 0.25, RSS: 50 << 20}, // component rows are not node load
		{Node: "b", CPUUtil: 0.5, RSS: 1 << 20},
	})
	la := tb.load["a"]
	if la.CPU != 0.5 || la.CPUCores != 0.25 || la.Memory != 0.5 || la.RSSBytes != 50<<20 || !la.At.Equal(at) {
		t.Errorf("load of a = %+v, want cpu 0.5 of the 0.5-core quota, memory 0.5 of 100Mi", la)
	}
	lb := tb.load["b"]
	if lb.CPU <= 0 || lb.CPU > 0.5 || lb.Memory <= 0 || lb.Memory >= 1 {
		t.Errorf("load of unlimited b = %+v, want fractions of the host's CPUs and memory", lb)
	}
}

// A process started with a Service shows it in Status (also over the control socket), and a
// sampler round adds node load to Status.
func TestStatusReportsServiceAndLoad(t *testing.T) {
	tb := startTestbed(t, `nodes: [{name: a, cpus: 0.5, labels: {tier: edge}}, {name: b}]
links: [{between: [a, b], delay: 1ms}]`)
	svc := &Service{Name: "dps", Port: 9000, Attributes: map[string]string{"accuracy": "0.97"}}
	if _, err := tb.Start(ProcSpec{Name: "s1", Node: "a", Args: []string{"sleep", "60"}, Service: svc}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Start(ProcSpec{Name: "bad", Node: "a", Args: []string{"sleep", "60"}, Service: &Service{Name: "x", Port: 0}}); err == nil {
		t.Error("Start accepted a service without a port")
	}
	tb.NewSampler(time.Second).Take()
	st, err := NewClient(tb.opts.StateDir, tb.Name).Status()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, p := range st.Procs {
		if p.Name == "s1" {
			found = true
			if p.Service == nil || p.Service.Name != "dps" || p.Service.Port != 9000 || p.Service.Attributes["accuracy"] != "0.97" {
				t.Errorf("s1 service = %+v", p.Service)
			}
		}
	}
	if !found {
		t.Errorf("s1 not in status: %+v", st.Procs)
	}
	for _, n := range st.Nodes {
		if n.Load == nil || n.Load.At.IsZero() {
			t.Errorf("node %s: no load after a sampler round", n.Name)
		}
		if n.Name == "a" && n.Labels["tier"] != "edge" {
			t.Errorf("node a labels = %v", n.Labels)
		}
	}
}
