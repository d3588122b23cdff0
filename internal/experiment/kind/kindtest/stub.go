package kindtest

import (
	"fmt"
	"sort"

	"github.com/continuum-project/continuum/internal/experiment/kind"
)

// stubs are the endpoints of the kinds that other systems' tests most often put beside their
// own, as those kinds declare them (their config keys and defaults). internal/systems/install's
// TestKindStubsMatch, which links every system, holds each to the real kind.
var stubs = map[string]func(cfg map[string]any) []kind.Endpoint{
	"kv": func(c map[string]any) []kind.Endpoint {
		eps := []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolEtcdV3, Port: port(c, "client_port", 2379)}}
		if c["cluster"] != nil && c["cluster"] != "" {
			eps = append(eps, kind.Endpoint{Name: "peer", Protocol: "kv-peer", Port: port(c, "peer_port", 2380)})
		}
		return eps
	},
	"etcd": func(c map[string]any) []kind.Endpoint {
		return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolEtcdV3, Port: port(c, "client_port", 2379)},
			{Name: "peer", Protocol: "etcd-raft", Port: port(c, "peer_port", 2380)}}
	},
	"redis": func(c map[string]any) []kind.Endpoint {
		if c["cluster"] != nil && c["cluster"] != "" {
			return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolRedisCluster, Port: port(c, "port", 6379)}}
		}
		return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolRedis, Port: port(c, "port", 6379)}}
	},
	"mosquitto": func(c map[string]any) []kind.Endpoint {
		return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolMQTT, Port: port(c, "port", 1883)}}
	},
	"kafka": func(c map[string]any) []kind.Endpoint {
		return []kind.Endpoint{{Name: "client", Protocol: kind.ProtocolKafka, Port: port(c, "port", 9092)},
			{Name: "controller", Protocol: "kafka-raft", Port: port(c, "controller_port", 9093)}}
	},
	"http-echo":         httpStub,
	"faas-function":     httpStub,
	"faas-microservice": httpStub,
}

func httpStub(c map[string]any) []kind.Endpoint {
	return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: port(c, "port", 8080)}}
}

func port(c map[string]any, key string, def int) int {
	if p, ok := c[key].(int); ok {
		return p
	}
	return def
}

// Stub registers stand-ins for other systems' component kinds, by name (kv, etcd, redis,
// mosquitto, kafka, http-echo, function, microservice), so that a system's kinds tests describe
// the other components of a run (Decode, Component) without linking every system:
// internal/systems/install links them all (client-go, Pebble, Kafka's client...) into each test
// binary that imports it, each built with -race. A stub takes any config mapping, declares the
// endpoints the real kind declares for it, and its command runs nothing.
//
// A test that needs another kind's own behaviour (its command, its validation), or a whole
// scenario of real kinds, imports install instead (internal/experiment's tests load every
// shipped scenario with the real kinds). Call Stub from the test package's init: the registry
// panics on a duplicate, so a stub can never shadow a real kind linked into the same binary.
func Stub(names ...string) {
	for _, name := range names {
		eps, ok := stubs[name]
		if !ok {
			panic(fmt.Sprintf("kindtest.Stub: no stub for kind %q (stubs: %v)", name, StubNames()))
		}
		kind.Register(kind.Def[map[string]any]{
			Name:     name,
			Role:     kind.RoleComponent,
			Summary:  "test stub of " + name,
			Defaults: func() *map[string]any { return &map[string]any{} },
			Command: func(kind.Env, *map[string]any) (kind.Command, error) {
				return kind.Command{Args: []string{"/bin/false", "stub of " + name}}, nil
			},
			Endpoints: func(cfg *map[string]any) []kind.Endpoint { return eps(*cfg) },
		})
	}
}

// StubNames are the kinds Stub stands in for, sorted.
func StubNames() []string {
	names := make([]string, 0, len(stubs))
	for n := range stubs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// StubEndpoints are the endpoints the stub of kind name declares for cfg (for the test that
// holds the stubs to the real kinds).
func StubEndpoints(name string, cfg map[string]any) []kind.Endpoint { return stubs[name](cfg) }
