// Package streamcmd is the stream system's command line: `continuum realtime-db`, the
// Firebase-compatible realtime database (package stream/rtdb) on continuum kv or etcd.
package streamcmd
