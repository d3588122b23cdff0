package benchkit

import "testing"

func TestGoalLines(t *testing.T) {
	for _, c := range []struct {
		name string
		g    Goal
		want string
	}{
		{"met", Check("p99 added <= 0.5 ms at 1000 req/s", true, "+0.120 ms"), "p99 added <= 0.5 ms at 1000 req/s: +0.120 ms: **met**"},
		{"not met", Check("VmRSS <= 10.0 MiB", false, "12.0 MiB"), "VmRSS <= 10.0 MiB: 12.0 MiB: **not met**"},
		{"not evaluated", Skip("kv >= 3x etcd", "etcd not measured"), "kv >= 3x etcd: **not evaluated** (etcd not measured)"},
		{"undetermined with advice", Goal{Goal: "rate", Measured: "kv 5000", Verdict: Undetermined, Note: "widen --rates"}, "rate: kv 5000: **undetermined** (widen --rates)"},
		{"a figure without a verdict", Report("memory per 1M keys", "kv 10 MiB vs etcd 20 MiB"), "memory per 1M keys: kv 10 MiB vs etcd 20 MiB"},
	} {
		if got := c.g.Line(); got != c.want {
			t.Errorf("%s: Line() = %q, want %q", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		goals []Goal
		want  bool
	}{
		{nil, true},
		{[]Goal{Check("a", true, ""), Report("b", "1")}, true},
		{[]Goal{Check("a", true, ""), Check("b", false, "")}, false},
		{[]Goal{Skip("a", "x")}, false},
	} {
		if got := AllMet(c.goals); got != c.want {
			t.Errorf("AllMet(%+v) = %v", c.goals, got)
		}
	}
}
