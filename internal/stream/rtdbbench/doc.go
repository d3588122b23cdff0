// Package rtdbbench is `continuum bench stream-notify`: how fast the realtime database's
// listeners hear of writes. It starts continuum kv (a child process: `continuum kv`) and a
// realtime database in this process on loopback, connects N SSE listeners to one path, writes at
// a fixed rate (open loop, latency from each write's intended send time) and measures write-to-listener latency at every listener;
// beside it, in the same run, N raw kv watches on one key with the same write rate, the floor
// the realtime database's protocol layer adds to. It also measures sustained writes/s (closed
// loop) against the same floor, and how long N listeners take to be listening again after the
// realtime database restarts.
package rtdbbench
