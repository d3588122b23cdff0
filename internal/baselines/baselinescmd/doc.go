// Package baselinescmd holds the commands that set third-party servers up: `continuum
// redis-cluster` (creates a Redis Cluster from running redis-server instances).
package baselinescmd
