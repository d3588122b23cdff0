// Package http1 is the HTTP/1.1 wire format as the proxy's server loop reads and writes it:
// a parser of request and answer heads that accepts a strict subset of RFC 9112 and declines
// everything else (ErrHeadFallback) rather than being lenient, the framing checks that refuse
// a request framed two ways (the smuggling guard), the copy of bodies by Content-Length,
// chunked or until close, and how a request names its service (ServiceHeader, the Host
// header's first label).
//
// What it does not own: connections, deadlines and what to do with a parsed head — that is
// the server loop and the forwarding path (package dataplane) — nor anything net/http's server
// answers for the requests the loop hands over.
package http1
