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
// batch carries dead letters too), each within the database's bound of keys (leaves) per write
// (one kv transaction of 128 operations: 120 leaves and 60 records per PATCH by default), after
// keeping only the last record of each id (so no PATCH names a path twice, and the batches of
// one poll touch disjoint paths and may be written concurrently). The records it superseded
// stay beside it: if the database refuses it, the newest of them is written in its place. An
// unreachable or failing database is retried with a growing back-off, never skipped. A poison
// record (not a JSON object, its key field twice, a key the database forbids, too deep or too
// large for one write) is logged and written, with its coordinates and raw bytes, under the
// dead-letter path in the same batch, and consumption goes on: nothing is dropped silently.
//
// # The pipeline's guarantee
//
// Invariant: every record Kafka acknowledged (the bridge answered 200 for it) ends, once its
// partition has been consumed, in one of these states:
//
//   - stored: it is the value at <path>/<id>;
//   - superseded by a stored record: a later record of the same id (the same key, so the same
//     partition at a later offset) was stored after it;
//   - a dead letter at <dead-letter path>/<topic>-<partition>-<offset>, saying why.
//
// A record is never superseded by one that was not stored: a refused record hands its place
// back to the record it superseded (writeBatch). An id's key field is read the way the bridge
// keys the record (a record naming it twice is a dead letter), so the keep-last rule only ever
// compares records of one partition, in offset order. Offsets are committed only once every
// record up to them is in one of the three states, so restarts of the aggregator or of the
// broker and rebalances lead at worst to records written again, in their partition's order.
// TestPipelineInvariant checks this with random records, refusals, restarts and rebalances.
//
// The documented window: writes are not fenced by offset in the database. A member that lost
// its partitions while a write of its own was still being retried (its session or rebalance
// timeout passed, e.g. its link to the group coordinator was cut but not its link to the
// database) can land that write after the new owner wrote a newer record of the same id; the
// id then holds the older value until its next record. A member that stops, crashes or takes
// part in a rebalance has no such write in flight (polls block rebalances until the poll's
// records are written), so the window needs a member whose write outlasts its rebalance
// timeout (Config.RebalanceTimeout) or session while it keeps writing. TestStaleWriteWindow
// shows it.
package aggregator
