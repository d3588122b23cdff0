// Package nemesis holds the real-process fault test of continuum kv clusters: members run as
// `continuum kv` processes on testbed nodes while a nemesis partitions the network, kills
// members with SIGKILL and restarts them, and pauses them; clients next to each member write
// throughout, and a checker verifies convergence, that no acknowledged write is lost, and
// read-your-writes and monotonic revisions on each member. (The simulated, many-seed checker is
// in package mvcc's tests.) It has no non-test code.
package nemesis
