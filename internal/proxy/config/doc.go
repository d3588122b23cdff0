// Package config is the proxy's configuration: the Config that proxy.Run takes, the per-service
// ServiceConfig (strategy, QoS requirement, estimate, probes, cooldowns, retries), their
// defaults and validation (which also refuses an admin listener other machines can reach
// without a token), and LoadConfig, which reads the YAML file and builds the discovery sources
// it names through the discovery registry.
//
// What it does not own: acting on a configuration — the pools (package pool), the data plane
// and the admin handler read it — nor the discovery sources themselves (package discovery).
package config
