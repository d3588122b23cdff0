// Package bridge is the stream-bridge: an HTTP server that turns posted JSON objects into Kafka
// records and answers only once Kafka has acknowledged them.
//
// POST /topics/<topic> takes one JSON object or a JSON array of objects. Each object's key field
// (Config.KeyField, "id") is the record's key, so every record of one id lands on one partition
// in order; the record's value is the object's bytes unchanged. The answer is 200 with the
// offsets once every record was acknowledged (acks=all and the idempotent producer by default),
// 400 naming what was wrong for bad input, 404 for a topic Kafka does not have, 413 for a body
// over the limit and 503 when Kafka does not acknowledge in time or is known to be down. An
// answer other than 200 acknowledges nothing: the client retries the whole post, and a record
// that was written after all is then in Kafka twice, under the same key; the aggregator's writes
// are keyed by it (idempotent), which is what makes the pipeline exactly-once in effect.
//
// The Kafka client is franz-go: pure Go (no cgo, so the binary stays static, unlike
// confluent-kafka-go over librdkafka), actively maintained and current with Kafka's protocol
// (KRaft, KIP-848 groups), with the idempotent producer on by default and up to five requests
// in flight per broker with it, per-partition batching with linger and compression. Sarama's
// idempotent producer allows one request in flight (Net.MaxOpenRequests = 1) and
// segmentio/kafka-go's writer has no idempotent producer at all.
//
// This package owns the HTTP side and the producer's settings; it knows nothing of the
// aggregator, the realtime database or experiments.
package bridge
