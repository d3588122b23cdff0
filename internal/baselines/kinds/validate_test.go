package kinds_test

import (
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind/kindtest"
)

// TestKindsReportEveryError: ycsb, redis-cluster and kafka report all their bad keys at once,
// each at its key with what it becomes (a flag of the command the kind starts, or the
// server.properties setting); good configs pass.
func TestKindsReportEveryError(t *testing.T) {
	for _, c := range []struct {
		kind, bad, good string
		want            [][2]string // key, flag
	}{
		{"ycsb", "{target: 'etcd=a:1', port: 2, clients: 2, rate: 10, conns: -1, recordcount: 0, workload: g}", "{component: e, rate: 10}",
			[][2]string{{"target", "--target"}, {"port", "--target"}, {"rate", "--rate"}, {"conns", "--conns"},
				{"recordcount", "--recordcount"}, {"workload", "--workload"}}},
		{"redis-cluster", "{replicas_per_master: -1, port: 0}", "{cluster: c}",
			[][2]string{{"cluster", "--member"}, {"replicas_per_master", "--replicas"}, {"port", "--listen"}}},
		{"kafka", "{port: 0, data_dir: rel, topics: [{name: a, partitions: 0, replication: 1}, {name: a, partitions: 1, replication: 1}]}",
			"{data_dir: /d, topics: [{name: a, partitions: 1, replication: 1}]}",
			[][2]string{{"port", "listeners (server.properties)"}, {"topics[0]", "--topic"}, {"topics[1]", "--topic"},
				{"data_dir", "log.dirs (server.properties)"}}},
	} {
		kindtest.CheckFieldErrors(t, c.kind, c.bad, c.good, c.want)
	}
}
