package kinds

import (
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/shareddata"
)

// storeProtocols are the protocols of the stores shareddata has a backend for.
var storeProtocols = []string{kind.ProtocolEtcdV3, kind.ProtocolRedis, kind.ProtocolRedisCluster}

// backendFor finds the store component name (on port, or its first store endpoint) and the
// shareddata backend its protocol implies: etcd-v3 is served by an etcd or kv component (the
// backend is its kind), Redis by a standalone redis, a Redis Cluster member leads to the whole
// cluster.
func backendFor(env kind.Env, name string, port int) (addr, backend string, err error) {
	st, err := env.Store(name, port, storeProtocols...)
	if err != nil {
		return "", "", err
	}
	switch st.Protocol {
	case kind.ProtocolRedisCluster:
		return st.Addr, shareddata.BackendRedisCluster, nil
	case kind.ProtocolRedis:
		return st.Addr, shareddata.BackendRedis, nil
	}
	return st.Addr, st.Kind, nil
}
