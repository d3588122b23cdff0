// Package ycsb implements the YCSB core workload (workloads A–F of the Yahoo! Cloud Serving
// Benchmark) on top of the loadgen engine: the key space and its growth, the request
// distributions (uniform, scrambled zipfian, latest), the operation mix, and the load phase
// (insert recordcount records) and run phase. It drives a DB, the small interface a store
// adapter implements (package kvtarget has etcd v3 and Redis); it knows nothing of protocols,
// and scheduling and recording are loadgen's (one series per operation type).
//
// Semantics follow YCSB's CoreWorkload with these choices:
//   - Keys are "user" + the decimal FNV-64 hash of the key number (insertorder=hashed, the
//     default) or of the number itself (ordered), as YCSB builds them.
//   - A record is fieldcount fields of fieldlength bytes stored as one value of
//     fieldcount*fieldlength printable bytes: the stores compared here have no fields, so an
//     update rewrites the whole record (YCSB's writeallfields=true) and a read returns it all.
//   - zipfian is YCSB's scrambled zipfian (constant 0.99, hashed over 10^10 items), over the
//     loaded records plus twice the inserts operationcount is expected to make; latest is
//     YCSB's skewed-latest over the acknowledged inserts; uniform covers the loaded records.
//   - A key is only chosen once its insert was acknowledged (YCSB's acknowledged counter), so
//     reads of keys whose insert is still in flight do not count as misses.
//   - read-modify-write is a read followed by an update of the same key (two round trips).
//
// Everything the workload draws (operation, key, scan length, value bytes) comes from one
// generator seeded by Config.Seed, so an open-loop run issues the same sequence every time.
package ycsb
