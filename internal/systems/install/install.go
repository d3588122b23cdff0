// Package install registers every system's experiment kinds and report sections by importing
// their scenario adapters, as Prometheus' discovery/install does for its service discoveries.
// A binary or test that runs scenarios imports it once; adding a system adds one line here.
package install

import (
	_ "github.com/continuum-project/continuum/internal/baselines/scenario"  // etcd, redis, ycsb
	_ "github.com/continuum-project/continuum/internal/faas/scenario"       // function, microservice
	_ "github.com/continuum-project/continuum/internal/httpecho/scenario"   // http-echo, http-load
	_ "github.com/continuum-project/continuum/internal/iot/scenario"        // iot
	_ "github.com/continuum-project/continuum/internal/kv/scenario"         // kv, kv-lag
	_ "github.com/continuum-project/continuum/internal/pace/scenario"       // pace
	_ "github.com/continuum-project/continuum/internal/proxy/scenario"      // proxy + QoS report sections
	_ "github.com/continuum-project/continuum/internal/shareddata/scenario" // maintenance
)
