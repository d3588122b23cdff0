// Package orchestrator is Continuum's federated-learning orchestrator (seeds/004 §3): a
// long-lived service that receives a training job (the user's training and cost configuration),
// collects the nodes' features (role, communication costs, label distribution), picks a
// configuration with package plan (centralized, or clients → local aggregators → global
// aggregator clustered by label distribution under a communication budget), deploys the Flower
// services of python/src/continuum_fl on the nodes through a Runner (the testbed's control
// socket, or local processes), watches the nodes, and reconfigures when one leaves or joins.
//
// What it does differently from the seed's orchestrator, on purpose:
//   - A reconfiguration changes only what the change touches: a departed client's aggregator is
//     told its new client count over its control API; only clients whose parent changes are
//     restarted; the global aggregator keeps running with the global model in memory. The seed
//     deleted every service and slept 90 s.
//   - A model repository: the global aggregator uploads the global model after every round
//     (PUT /model); a global aggregator started again (its node came back, or the job resumed)
//     continues from the latest snapshot instead of from scratch.
//   - Whether to re-optimise the clusters at all is plan.Replan's cost/benefit decision (the
//     seed's phase 6).
//
// Files in the output directory: fl-events.jsonl (one Event per line: configure, node-change,
// reconfigure with its timings, resumed, service-exited, service-restarted, stop; events.go),
// rounds.csv (the global model's accuracy and loss per round, with bytes and the cost spent),
// model-repo/ (round-R.npz), partition.json (every client's data), services/<name>/ (each
// service's own fl.jsonl and logs).
//
// Where things are: orchestrator.go is the HTTP API and the job it runs; run.go a job's state;
// loop.go its workflow (configure, deploy, wait for the target, stop); monitor.go the node
// watch and reconfiguration; apply.go moving the running services to a configuration;
// aggregators.go the aggregators' addresses and readiness (their control API is package
// fl/control); services.go the services' command lines; runner.go where they run.
package orchestrator
