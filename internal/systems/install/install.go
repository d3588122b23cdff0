// Package install registers every system's experiment kinds, report sections and commands by
// importing each system's kinds package (which imports its command package), as Prometheus'
// discovery/install does for its service discoveries. A binary or test that runs scenarios
// imports it once; adding a system adds one line here. A command package that its kinds
// package does not import, because it would bring a heavy dependency into every test that
// loads the kind, is imported here directly (kv's kubebenchcmd, which links client-go). Its
// layering test holds every system to the rules of docs/architecture.md.
package install

import (
	_ "github.com/continuum-project/continuum/internal/app/kinds"        // app-process, app-container (users' own programs and images)
	_ "github.com/continuum-project/continuum/internal/baselines/kinds"  // etcd, redis, redis-cluster, mosquitto, kafka, ycsb
	_ "github.com/continuum-project/continuum/internal/faas/kinds"       // faas-function, faas-microservice, faas-gateway + Functions section
	_ "github.com/continuum-project/continuum/internal/fl/kinds"         // fl-orchestrator, fl-job + Federated learning section; continuum fl
	_ "github.com/continuum-project/continuum/internal/httpecho/kinds"   // http-echo, http-load
	_ "github.com/continuum-project/continuum/internal/iot/kinds"        // iot + IoT section
	_ "github.com/continuum-project/continuum/internal/kv/kinds"         // kv, kv-lag
	_ "github.com/continuum-project/continuum/internal/kv/kubebenchcmd"  // bench kube-store
	_ "github.com/continuum-project/continuum/internal/proxy/kinds"      // proxy + QoS routing section
	_ "github.com/continuum-project/continuum/internal/shareddata/kinds" // shareddata-pace, -maintenance, -freshness + Shared data section
	_ "github.com/continuum-project/continuum/internal/stream/kinds"     // realtime-db, stream-bridge, -aggregator, -users + Edge streaming
)
