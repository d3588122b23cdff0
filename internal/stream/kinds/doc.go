// Package kinds is the stream system's adapter to experiments: the components "realtime-db"
// (`continuum stream realtime-db`, package stream/rtdb: a Firebase-compatible realtime database on a kv
// or etcd component), "stream-bridge" (HTTP to a kafka component, package stream/bridge) and
// "stream-aggregator" (Kafka into a realtime-db, package stream/aggregator), the workload
// "stream-users" (seeds/003's users and subscribers, package stream/streamload), and the
// "stream" report section.
package kinds
