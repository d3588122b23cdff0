// Package proxycmd is `continuum proxy`: the per-node QoS-aware HTTP proxy with every
// discovery source (cmd/continuum-proxy is the same proxy as a slim binary of its own).
package proxycmd
