// Package flbench measures the fl system's planning (`continuum bench fl-plan`): the runtime of
// the min-kld clustering (heuristic, and exact where it runs) at n = 20, 100 and 1000 clients
// with 4 and 10 local aggregators, of min-cost and of a replan after a client leaves, and the
// heuristic's mean KLD against the exact one on random instances where both run. Instances are
// random label-skewed populations as in seeds/004 (each client holds 1 to 3 classes).
package flbench
