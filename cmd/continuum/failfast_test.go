package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/testenv"
)

// closedPort is a loopback port where nothing listens (and no other test is given).
func closedPort(t *testing.T) string { return strconv.Itoa(testenv.FreePort(t)) }

// Pointed where nothing listens, clients say so within seconds (not after their run's or a
// context's deadline), and a workload that got nothing through exits 3 with a line saying so.
func TestFailFastAndNothingThrough(t *testing.T) {
	c := newCLI(t)
	port := closedPort(t)
	url := "http://127.0.0.1:" + port
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"shareddata", "set", "--backend", "etcd", "--endpoints", url, "app1", "mode=fast"}, 1,
			"nothing listens at " + url + " (connection refused)"},
		{[]string{"pace", "producer", "--backend", "kv", "--endpoints", url, "--group", "g1", "--id", "p1", "--duration", "30s", "--out", c.dir + "/p1"}, 1,
			"nothing listens at " + url},
		{[]string{"load", "ycsb", "--target", "etcd=" + url, "--recordcount", "10", "--duration", "30s"}, 1,
			"nothing listens at " + url},
		{[]string{"load", "kv-lag", "--writer", url, "--reader", url, "--rate", "10", "--duration", "30s"}, 1,
			"nothing listens at " + url},
		{[]string{"load", "http", "--target", "edge=" + url + "/", "--rate", "20", "--duration", "1s"}, 3,
			"nothing got through: all 20 requests failed in the measured 1s (connection_refused: 20)"},
	}
	for _, tt := range tests {
		start := time.Now()
		_, errOut, err := c.run(tt.args...)
		took := time.Since(start)
		if got := exitStatus(err); got != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("continuum %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tt.args, " "), got, errOut, tt.code, tt.want)
		}
		// Generous for a busy machine, far below the 30 s the hanging versions took.
		if took > 20*time.Second {
			t.Errorf("continuum %s took %v", strings.Join(tt.args, " "), took)
		}
	}
}
