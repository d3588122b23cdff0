// Package streamload is the load generator and subscriber of the stream experiments (seeds/003
// §IV): U users, each sending R records with Normal inter-arrival times to a realtime database
// (REST PUT, the cloud-only path) or a stream bridge (HTTP POST to Kafka, the edge paths), and
// one subscriber on the same host receiving them (a Firebase SSE listener on a realtime-db path,
// or a Kafka consumer of the topic). It measures end-to-end latency per record (receipt time
// minus the record's intended send time; sender and subscriber share this host's clock) and
// accounts for every record: sent, acknowledged, received, lost (acknowledged, never received
// within the grace period), duplicated (received again) and whether the received content equals
// what was sent.
//
// It knows nothing of scenarios or reports: the stream kinds package runs it as the workload
// `stream-users` (`continuum stream users`).
package streamload
