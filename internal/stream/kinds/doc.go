// Package kinds is the stream system's adapter to experiments: the component "realtime-db"
// (`continuum realtime-db`, package stream/rtdb), a Firebase-compatible realtime database on a
// kv or etcd component of the scenario.
package kinds
