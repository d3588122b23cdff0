package http1

import (
	"bytes"
)

// Request framing that can be read two ways is refused, whichever server would serve the
// request. RFC 9112 6.1: a request with both Content-Length and Transfer-Encoding "ought to be
// handled as an error" and the connection closed after it at the least; and Transfer-Encoding in
// an HTTP/1.0 request is framed by Content-Length by net/http, by the coding by others. A
// proxy that reads such a request one way while the hop before it read it the other is how a
// request is smuggled inside another's body. net/http's server accepts both (it drops the
// Content-Length, or ignores the coding), so the loop, which reads every request head first
// (dataplane's serve.go: a head it hands over is read whole and checked here, and net/http serves one
// request per handed-over connection), answers 400 and closes the connection.

// MaxHandoverHead bounds the head the loop reads whole before it hands a connection over:
// net/http's own limit (MaxHeaderBytes' default, 1 MiB, plus the 4 KiB it allows over it). A
// longer head is handed over as it is, and net/http answers 431.
const MaxHandoverHead = 1<<20 + 4<<10

// HeadEnd looks for the end of the head at the start of b, from from (the start of a line):
// it returns the head's length (up to and including the empty line that ends it; a bare LF
// ends a line, as net/http's reader takes it), or -1 and the start of the last, unfinished line
// to go on from when more bytes have come.
func HeadEnd(b []byte, from int) (n, next int) {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1, i
		}
		line := b[i : i+j]
		i += j + 1
		if i > j+1 && (len(line) == 0 || len(line) == 1 && line[0] == '\r') {
			return i, i // an empty line after the request line
		}
	}
	return -1, len(b)
}

// FramingConflict returns why the request head is framed ambiguously ("" if it is not). It
// reads leniently (any line with a colon is a field, names compared ignoring case and
// surrounding blanks) so that whatever another parser might take for a framing field counts.
func FramingConflict(head []byte) string {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	http10 := bytes.HasSuffix(line, []byte("HTTP/1.0"))
	cl, te := framingFields(head)
	switch {
	case cl && te:
		return "the request has both Content-Length and Transfer-Encoding, which frame its body two ways (RFC 9112 6.1): send one of them"
	case te && http10:
		return "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1): send Content-Length, or use HTTP/1.1"
	}
	return ""
}

// AnswerFramedTwoWays reports an answer head framed two ways (Content-Length with
// Transfer-Encoding, or Transfer-Encoding in HTTP/1.0), read as leniently as framingConflict.
// net/http's parser settles both its own way (chunked wins; the coding ignored in HTTP/1.0)
// and keeps no trace of it, so readResponse checks the head's bytes.
func AnswerFramedTwoWays(head []byte) bool {
	cl, te := framingFields(head)
	return te && (cl || bytes.HasPrefix(head, []byte("HTTP/1.0")))
}

// framingFields reports whether the head (its first line skipped) has Content-Length and
// Transfer-Encoding fields: any line with a colon is a field, names compared ignoring case and
// surrounding blanks, so that whatever another parser might take for a framing field counts.
func framingFields(head []byte) (cl, te bool) {
	_, rest, _ := bytes.Cut(head, []byte("\n"))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name = bytes.Trim(name, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			cl = true
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			te = true
		}
	}
	return cl, te
}
