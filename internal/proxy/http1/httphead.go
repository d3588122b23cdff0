package http1

import (
	"bytes"
	"errors"
)

// The server loop's parser of HTTP/1.1 message heads (package dataplane). It accepts a strict subset
// of RFC 9112 — what HTTP/1.1 clients and servers send in practice — and says "not mine"
// (errHeadFallback) for everything else: obsolete line folding, bare LF line ends, a
// request-target that is not in origin form, HTTP versions other than 1.0 and 1.1, more
// than maxHeaders fields, conflicting framing (Content-Length with Transfer-Encoding,
// differing lengths, a transfer coding other than chunked), Upgrade, Expect other than
// 100-continue. Such a request goes, untouched, to net/http's server, which answers it as
// before (400, 417, 431 or the proxied answer); an answer head the parser declines is read by
// net/http's parser instead. So the parser never has to be lenient: leniency in a proxy's
// framing is how requests get smuggled past it.
//
// Parsing does not copy: names and values are slices of the buffered bytes, valid until the
// reader they came from reads again. Callers write the head on before they read the body.

// maxHeaders bounds the fields of a head the loop parses (more go to net/http).
const maxHeaders = 64

var (
	// ErrHeadFallback: the head is well-formed HTTP (or not) but outside what the loop parses.
	ErrHeadFallback = errors.New("head outside the server loop's subset")
	// ErrHeadIncomplete: the bytes so far end before the head does.
	ErrHeadIncomplete = errors.New("head incomplete")
)

// RequestHead is a parsed request head, reused from request to request of a connection.
type RequestHead struct {
	Method []byte
	URI    []byte
	Minor  int // HTTP/1.minor: 0 or 1
	Fields []Field

	// From the fields. The slices are the fields' values.
	Host       []byte
	HasHost    bool
	Service    []byte // X-Continuum-Service ("" with nServiceHdr 0)
	NService   int
	Length     int64 // Content-Length; -1: chunked; 0: no body
	chunked    bool
	CloseAfter bool // the client asked to close (or HTTP/1.0 without keep-alive)
	Expect     bool // Expect: 100-continue
	// connTokens: the Connection header names headers other than close/keep-alive, which are
	// then not forwarded (hop-by-hop by the client's say).
	ConnTokens bool
}

// ParseRequestHead parses a request head at the start of b. It returns the bytes the head
// takes.
func ParseRequestHead(b []byte, h *RequestHead) (int, error) {
	e, err := lineEnd(b)
	if err != nil {
		return 0, err
	}
	line := b[:e]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return 0, ErrHeadFallback
	}
	h.Method = line[:sp]
	for _, c := range h.Method {
		if !tchar[c] {
			return 0, ErrHeadFallback
		}
	}
	rest := line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp <= 0 || len(rest)-sp-1 != len("HTTP/1.1") {
		return 0, ErrHeadFallback
	}
	h.URI = rest[:sp]
	if h.URI[0] != '/' {
		return 0, ErrHeadFallback // absolute form, authority form, asterisk: net/http's
	}
	for i, c := range h.URI {
		if c <= ' ' || c >= 0x7f || c == '#' {
			return 0, ErrHeadFallback
		}
		if c == '%' && (i+2 >= len(h.URI) || !isHex(h.URI[i+1]) || !isHex(h.URI[i+2])) {
			return 0, ErrHeadFallback // net/http's 400 "invalid URL escape"
		}
	}
	switch string(rest[sp+1:]) {
	case "HTTP/1.1":
		h.Minor = 1
	case "HTTP/1.0":
		h.Minor = 0
	default:
		return 0, ErrHeadFallback
	}
	fields, n, err := parseFields(b[e+2:], h.Fields[:0])
	h.Fields = fields
	if err != nil {
		return 0, err
	}
	if err := h.interpret(); err != nil {
		return 0, err
	}
	return e + 2 + n, nil
}

// interpret reads the fields the proxy acts on.
func (h *RequestHead) interpret() error {
	h.Host, h.HasHost, h.Service, h.NService = nil, false, nil, 0
	h.Length, h.chunked, h.Expect, h.ConnTokens = 0, false, false, false
	h.CloseAfter = h.Minor == 0
	haveLength := false
	for _, f := range h.Fields {
		switch {
		case FieldIs(f.Name, "Host"):
			if h.HasHost {
				return ErrHeadFallback // net/http's 400
			}
			if !validHost(f.Value) {
				return ErrHeadFallback // net/http's 400 "malformed Host header"
			}
			h.Host, h.HasHost = f.Value, true
		case FieldIs(f.Name, ServiceHeader):
			if h.NService == 0 {
				h.Service = f.Value
			}
			h.NService++
		case FieldIs(f.Name, "Content-Length"):
			n, ok := ParseLength(f.Value)
			if !ok || haveLength {
				return ErrHeadFallback
			}
			h.Length, haveLength = n, true
		case FieldIs(f.Name, "Transfer-Encoding"):
			if h.chunked || h.Minor == 0 || !ASCIIEqualFold(f.Value, "chunked") {
				return ErrHeadFallback
			}
			h.chunked = true
		case FieldIs(f.Name, "Connection"):
			for v := f.Value; len(v) > 0; {
				var tok []byte
				tok, v = NextToken(v)
				switch {
				case len(tok) == 0:
				case ASCIIEqualFold(tok, "close"):
					h.CloseAfter = true
				case ASCIIEqualFold(tok, "keep-alive"):
					if h.Minor == 0 {
						h.CloseAfter = false
					}
				case ASCIIEqualFold(tok, "upgrade"):
					return ErrHeadFallback // WebSocket and the like: net/http's path splices them
				default:
					h.ConnTokens = true
				}
			}
		case FieldIs(f.Name, "Upgrade"):
			return ErrHeadFallback
		case FieldIs(f.Name, "Expect"):
			if !ASCIIEqualFold(f.Value, "100-continue") {
				return ErrHeadFallback // net/http's 417
			}
			h.Expect = true
		}
	}
	switch {
	case h.Minor == 1 && !h.HasHost:
		return ErrHeadFallback // net/http's 400 "missing required Host header"
	case h.chunked && haveLength:
		return ErrHeadFallback
	case h.chunked:
		h.Length = -1
	}
	// Keep-alive after an HTTP/1.0 request needs its body's end: a chunked one cannot be
	// (refused above).
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validHost accepts the Host values the loop forwards: letters, digits and the characters of
// host names, IP literals and ports (a subset of what net/http accepts).
func validHost(v []byte) bool {
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return true
}

// ResponseHead is an instance's parsed answer head.
type ResponseHead struct {
	minor  int
	Status int
	Reason []byte
	Fields []Field

	Length  int64 // Content-Length (-1: none)
	Chunked bool
	Close   bool // the instance closes the connection after this answer
	trailer bool // a Trailer field announces trailers
	// connTokens: the Connection header names other headers (not forwarded).
	ConnTokens bool
}

// errAnswerFraming: an answer whose framing reads two ways (Content-Length with
// Transfer-Encoding, or Transfer-Encoding in HTTP/1.0; RFC 9112 6.1, 6.3). The loop does not
// guess which end the instance meant: the answer is refused as the instance's failure (502),
// and its connection is closed, since what follows on it cannot be trusted.
var ErrAnswerFraming = errors.New("the instance's answer is framed two ways (Content-Length with Transfer-Encoding, or Transfer-Encoding in HTTP/1.0)")

// ParseResponseHead parses an answer head at the start of b.
func ParseResponseHead(b []byte, h *ResponseHead) (int, error) {
	e, err := lineEnd(b)
	if err != nil {
		return 0, err
	}
	line := b[:e]
	// HTTP/1.x SP 3DIGIT SP reason
	if len(line) < 13 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || line[12] != ' ' {
		return 0, ErrHeadFallback
	}
	switch line[7] {
	case '1':
		h.minor = 1
	case '0':
		h.minor = 0
	default:
		return 0, ErrHeadFallback
	}
	st := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, ErrHeadFallback
		}
		st = st*10 + int(c-'0')
	}
	if st < 100 {
		return 0, ErrHeadFallback
	}
	h.Status = st
	h.Reason = line[13:]
	for _, c := range h.Reason {
		if c < ' ' && c != '\t' || c == 0x7f {
			return 0, ErrHeadFallback
		}
	}
	fields, n, err := parseFields(b[e+2:], h.Fields[:0])
	h.Fields = fields
	if err != nil {
		return 0, err
	}
	h.Length, h.Chunked, h.trailer, h.ConnTokens = -1, false, false, false
	h.Close = h.minor == 0
	for _, f := range h.Fields {
		switch {
		case FieldIs(f.Name, "Content-Length"):
			v, ok := ParseLength(f.Value)
			if !ok || h.Length >= 0 {
				return 0, ErrHeadFallback
			}
			h.Length = v
		case FieldIs(f.Name, "Transfer-Encoding"):
			if h.Chunked || !ASCIIEqualFold(f.Value, "chunked") {
				return 0, ErrHeadFallback
			}
			h.Chunked = true
		case FieldIs(f.Name, "Trailer"):
			h.trailer = true
		case FieldIs(f.Name, "Connection"):
			for v := f.Value; len(v) > 0; {
				var tok []byte
				tok, v = NextToken(v)
				switch {
				case len(tok) == 0:
				case ASCIIEqualFold(tok, "close"):
					h.Close = true
				case ASCIIEqualFold(tok, "keep-alive"):
					if h.minor == 0 {
						h.Close = false
					}
				default:
					h.ConnTokens = true
				}
			}
		}
	}
	if h.Chunked && (h.Length >= 0 || h.minor == 0) {
		return 0, ErrAnswerFraming
	}
	return e + 2 + n, nil
}
