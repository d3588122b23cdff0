// Package baselines is the system of third-party servers Continuum starts: the systems it is
// measured against or needs beside it, run as real processes on this machine. etcd 3.6 (the
// binary `make setup` builds into .tools/bin, or $CONTINUUM_ETCD_BIN), Redis 7 (redis-server with
// AOF, appendfsync everysec by default; standalone or cluster), and the MQTT broker mosquitto
// (Debian's package) that IoT devices publish to, and Apache Kafka 4.4 in KRaft mode (the jars
// `make setup` resolves into .tools/kafka, run with java; StartKafka). It starts continuum kv the same
// way (`continuum kv` with etcd's flag names) so that a benchmark treats every store alike. Each
// server gets its own data directory and free loopback ports, is ready when its start function
// returns (checked through its client protocol, with a deadline), reports its RSS and
// data-directory size, and stops with SIGTERM, then SIGKILL after a grace period. Servers also
// die with the process that started them. Its kinds (package kinds) deploy the same programs in
// scenarios.
//
// It does not drive load (package ycsb does) and knows nothing of the testbed: the experiment
// runner starts the same programs inside nodes through the component kinds.
package baselines
