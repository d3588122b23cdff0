// Package qos is the proxy's QoS model, the parts that know nothing of connections or of a
// pool's locking: the attribute requirements a service states and how an instance's
// attributes meet them (requirement.go), the per-instance latency and success-rate window an
// estimate is computed from (estimator.go), and the selection rules the strategies apply to a
// set of instances — proxy-mity's proximity weights and the headroom score (weights.go).
//
// What it does not own: which instances are in a service's pool and why (package pool
// evaluates each instance with these pieces under the pool's lock), nor choosing an instance
// for a request (pool's pick, which reads the pool's selection sets).
package qos
