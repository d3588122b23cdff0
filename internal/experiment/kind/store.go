package kind

import (
	"net"
	"strconv"
)

// Store is where a workload reaches a data store component (etcd, kv, Redis, a Kafka broker,
// an MQTT broker): the address in the form that protocol's clients take, the protocol of the
// endpoint found, and the component's kind (etcd and kv both speak etcd-v3; a client that
// cares tells them apart by it).
type Store struct {
	Addr     string
	Protocol string
	Kind     string
}

// Store finds the store component name as Endpoint does (the endpoint on port, or the first
// that speaks one of protocols) and renders its address for the protocol's clients:
// http://host:port for etcd-v3 (what etcd's clientv3 and continuum's tools take), tcp://host:port
// for MQTT, host:port for Redis, Redis Cluster (a seed node: the client finds the rest) and Kafka
// (a bootstrap server).
func (env Env) Store(name string, port int, protocols ...string) (Store, error) {
	node, ep, err := env.Endpoint(name, port, protocols...)
	if err != nil {
		return Store{}, err
	}
	comp, _ := env.Component(name)
	return Store{Addr: ClientAddr(ep.Protocol, net.JoinHostPort(node, strconv.Itoa(ep.Port))), Protocol: ep.Protocol, Kind: comp.Kind}, nil
}

// ClientAddr renders host:port as the clients of protocol take an address.
func ClientAddr(protocol, hostPort string) string {
	switch protocol {
	case ProtocolEtcdV3, ProtocolHTTP:
		return "http://" + hostPort
	case ProtocolMQTT:
		return "tcp://" + hostPort
	default: // redis, redis-cluster, kafka
		return hostPort
	}
}
