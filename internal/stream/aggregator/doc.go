// Package aggregator is the stream-aggregator: a Kafka consumer group member that writes each
// record into a realtime database (package rtdb) over its REST API, exactly once in effect.
//
// Each record's JSON object becomes the value at <path>/<id> (id: the object's key field, or
// <topic>-<partition>-<offset> when it has none). Exactly once in effect rests on two rules:
//
//   - The write is idempotent: it sets the whole value at a path named by the record, so
//     writing a record again leaves the database as it was. Redelivery is harmless.
//   - Offsets are committed only after the write answered 2xx (the realtime database answers
//     once its kv transaction committed), so a record is never skipped: a crash (kill -9) of
//     the aggregator or of the broker at any point leads at worst to records written again.
//
// Records of one poll are batched into multi-path PATCHes (at <path>, or at the root when a
// batch carries dead letters too), each within
// the database's bound of keys (leaves) per write (one kv transaction of 128 operations: 120 leaves and 60 records per PATCH by default), after keeping
// only the last record of each id (so no PATCH names a path twice, and the batches of one poll
// touch disjoint paths and may be written concurrently). An unreachable or failing database is
// retried with a growing back-off, never skipped. A poison record (not a JSON object, a key
// the database forbids, too deep or too large for one write) is logged and written, with its
// coordinates and raw bytes, under the dead-letter path in the same batch, and consumption goes
// on: nothing is dropped silently.
package aggregator
