// Package baselinescmd holds the commands that set third-party servers up: `continuum
// redis-cluster` (creates a Redis Cluster from running redis-server instances) and `continuum
// kafka-topics create` (creates the topics of a kafka component once its brokers answer).
package baselinescmd
