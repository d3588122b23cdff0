// Package httpjson is the JSON side of this module's small HTTP control APIs (the testbed's
// control socket, the Kubernetes node agent, the Kafka bridge, the echo server's settings, the
// Redis-cluster join helper): an answer written as one JSON document, the one error body
// ({"error": "..."}) and a request body decoded with a bound on its size and an error that says
// what was wrong and where.
//
// It owns the encoding only: routing, status codes and what an error means stay with each
// server. Endpoints whose clients are not ours and expect another error shape (the Firebase
// protocols of stream/rtdb, the OpenFaaS gateway API, plain-text answers of the echo server)
// keep theirs. It imports nothing but the standard library, so every layer may use it.
package httpjson
