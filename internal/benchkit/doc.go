// Package benchkit is what every `continuum bench` shares: the open-loop rate sweep and its
// sustain rule, the order of repeated alternatives, medians with their spread, the header that
// says what produced a result (command, commit, machine, the host's load average before and
// after, and a caution when the machine was busy), goals with their verdicts, and the output:
// Markdown for docs/benchmarks/ and the result as JSON beside it.
//
// It owns the method's shared rules, not any system's measurement: it starts no server and
// drives no load (that is internal/loadgen and each system's bench package: kv/kvbench,
// proxy/proxybench, faas/faasbench, netbench), and it reads /proc only through
// internal/procstat. It is engine code and imports no system package; the systems' benches
// import it.
package benchkit
