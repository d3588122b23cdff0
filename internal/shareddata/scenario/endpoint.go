package scenario

import (
	"net"
	"strconv"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/shareddata"
)

// StoreEndpoint is how a client reaches the store component name (on port, or the endpoint
// it serves a store protocol on) and the shareddata backend that implies: an etcd v3 endpoint
// is http://host:port of an etcd or kv component (the backend is its kind), Redis is host:port
// (redis, or redis-cluster for a cluster member, which leads a client to the whole cluster).
func StoreEndpoint(env kind.Env, name string, port int) (addr, backend string, err error) {
	node, ep, err := env.Endpoint(name, port, kind.ProtocolEtcdV3, kind.ProtocolRedis, kind.ProtocolRedisCluster)
	if err != nil {
		return "", "", err
	}
	hostPort := net.JoinHostPort(node, strconv.Itoa(ep.Port))
	switch ep.Protocol {
	case kind.ProtocolRedisCluster:
		return hostPort, shareddata.BackendRedisCluster, nil
	case kind.ProtocolRedis:
		return hostPort, shareddata.BackendRedis, nil
	}
	comp, _ := env.Component(name)
	return "http://" + hostPort, comp.Kind, nil
}
