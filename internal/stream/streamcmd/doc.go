// Package streamcmd is the stream system's command line: `continuum stream realtime-db`, the
// Firebase-compatible realtime database (package stream/rtdb) on continuum kv or etcd;
// `continuum stream bridge` (HTTP to Kafka, package stream/bridge), `continuum stream aggregator`
// (Kafka into the realtime database, package stream/aggregator), `continuum stream users`
// (seeds/003's users and subscribers, package stream/streamload), `continuum bench stream-bridge`
// and `continuum bench stream-notify` (package stream/rtdbbench).
package streamcmd
