package main

import (
	"io"
	"strings"
	"testing"
)

// bench testbed rejects bad flags before it brings up any testbed, naming what is allowed.
func TestBenchTestbedRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeats", "0"}, "--repeats 0: must be at least 1"},
		{[]string{"--quick", "--repeats", "-1"}, "--repeats -1: must be at least 1"},
		{[]string{"--only", "throughput"}, `no case group "throughput" (groups: accuracy, jitter, packets, baseline, tcp, bandwidth, loss)`},
	} {
		root := newRootCmd()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"bench", "testbed"}, c.args...))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench testbed %v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
