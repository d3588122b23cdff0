package proxy

import (
	"bytes"
	"errors"
)

// The server loop's parser of HTTP/1.1 message heads (serve.go). It accepts a strict subset
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
	// errHeadFallback: the head is well-formed HTTP (or not) but outside what the loop parses.
	errHeadFallback = errors.New("head outside the server loop's subset")
	// errHeadIncomplete: the bytes so far end before the head does.
	errHeadIncomplete = errors.New("head incomplete")
)

// field is one header field: name and value (without surrounding whitespace).
type field struct{ name, value []byte }

// tchar: RFC 9110 token characters.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// parseFields parses header lines from b (which starts after the start line) up to and
// including the empty line. It returns the bytes consumed.
func parseFields(b []byte, fields []field) ([]field, int, error) {
	i := 0
	for {
		if i >= len(b) {
			return fields, 0, errHeadIncomplete
		}
		if b[i] == '\r' {
			if i+1 >= len(b) {
				return fields, 0, errHeadIncomplete
			}
			if b[i+1] != '\n' {
				return fields, 0, errHeadFallback
			}
			return fields, i + 2, nil
		}
		// name
		ns := i
		for i < len(b) && tchar[b[i]] {
			i++
		}
		if i >= len(b) {
			return fields, 0, errHeadIncomplete
		}
		if i == ns || b[i] != ':' {
			return fields, 0, errHeadFallback // obs-fold, space before the colon, bad char
		}
		name := b[ns:i]
		i++
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		vs := i
		for i < len(b) {
			c := b[i]
			if c == '\r' {
				break
			}
			// field-vchar, SP, HTAB, obs-text; no CTLs.
			if c < ' ' && c != '\t' || c == 0x7f {
				return fields, 0, errHeadFallback
			}
			i++
		}
		if i+1 >= len(b) {
			return fields, 0, errHeadIncomplete
		}
		if b[i+1] != '\n' {
			return fields, 0, errHeadFallback
		}
		ve := i
		for ve > vs && (b[ve-1] == ' ' || b[ve-1] == '\t') {
			ve--
		}
		if len(fields) == maxHeaders {
			return fields, 0, errHeadFallback
		}
		fields = append(fields, field{name: name, value: b[vs:ve]})
		i += 2
	}
}

// lineEnd returns the index of the CR of the first CRLF in b, errHeadIncomplete when b holds
// no line end yet, errHeadFallback for a bare LF.
func lineEnd(b []byte) (int, error) {
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0:
		return 0, errHeadIncomplete
	case i == 0 || b[i-1] != '\r':
		return 0, errHeadFallback
	}
	return i - 1, nil
}

// reqHead is a parsed request head, reused from request to request of a connection.
type reqHead struct {
	method []byte
	uri    []byte
	minor  int // HTTP/1.minor: 0 or 1
	fields []field

	// From the fields. The slices are the fields' values.
	host       []byte
	hasHost    bool
	service    []byte // X-Continuum-Service ("" with nServiceHdr 0)
	nService   int
	length     int64 // Content-Length; -1: chunked; 0: no body
	chunked    bool
	closeAfter bool // the client asked to close (or HTTP/1.0 without keep-alive)
	expect     bool // Expect: 100-continue
	// connTokens: the Connection header names headers other than close/keep-alive, which are
	// then not forwarded (hop-by-hop by the client's say).
	connTokens bool
}

// parseRequestHead parses a request head at the start of b. It returns the bytes the head
// takes.
func parseRequestHead(b []byte, h *reqHead) (int, error) {
	e, err := lineEnd(b)
	if err != nil {
		return 0, err
	}
	line := b[:e]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return 0, errHeadFallback
	}
	h.method = line[:sp]
	for _, c := range h.method {
		if !tchar[c] {
			return 0, errHeadFallback
		}
	}
	rest := line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp <= 0 || len(rest)-sp-1 != len("HTTP/1.1") {
		return 0, errHeadFallback
	}
	h.uri = rest[:sp]
	if h.uri[0] != '/' {
		return 0, errHeadFallback // absolute form, authority form, asterisk: net/http's
	}
	for i, c := range h.uri {
		if c <= ' ' || c >= 0x7f || c == '#' {
			return 0, errHeadFallback
		}
		if c == '%' && (i+2 >= len(h.uri) || !isHex(h.uri[i+1]) || !isHex(h.uri[i+2])) {
			return 0, errHeadFallback // net/http's 400 "invalid URL escape"
		}
	}
	switch string(rest[sp+1:]) {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
		h.minor = 0
	default:
		return 0, errHeadFallback
	}
	fields, n, err := parseFields(b[e+2:], h.fields[:0])
	h.fields = fields
	if err != nil {
		return 0, err
	}
	if err := h.interpret(); err != nil {
		return 0, err
	}
	return e + 2 + n, nil
}

// interpret reads the fields the proxy acts on.
func (h *reqHead) interpret() error {
	h.host, h.hasHost, h.service, h.nService = nil, false, nil, 0
	h.length, h.chunked, h.expect, h.connTokens = 0, false, false, false
	h.closeAfter = h.minor == 0
	haveLength := false
	for _, f := range h.fields {
		switch {
		case fieldIs(f.name, "Host"):
			if h.hasHost {
				return errHeadFallback // net/http's 400
			}
			if !validHost(f.value) {
				return errHeadFallback // net/http's 400 "malformed Host header"
			}
			h.host, h.hasHost = f.value, true
		case fieldIs(f.name, ServiceHeader):
			if h.nService == 0 {
				h.service = f.value
			}
			h.nService++
		case fieldIs(f.name, "Content-Length"):
			n, ok := parseLength(f.value)
			if !ok || haveLength {
				return errHeadFallback
			}
			h.length, haveLength = n, true
		case fieldIs(f.name, "Transfer-Encoding"):
			if h.chunked || h.minor == 0 || !asciiEqualFold(f.value, "chunked") {
				return errHeadFallback
			}
			h.chunked = true
		case fieldIs(f.name, "Connection"):
			for v := f.value; len(v) > 0; {
				var tok []byte
				tok, v = nextToken(v)
				switch {
				case len(tok) == 0:
				case asciiEqualFold(tok, "close"):
					h.closeAfter = true
				case asciiEqualFold(tok, "keep-alive"):
					if h.minor == 0 {
						h.closeAfter = false
					}
				case asciiEqualFold(tok, "upgrade"):
					return errHeadFallback // WebSocket and the like: net/http's path splices them
				default:
					h.connTokens = true
				}
			}
		case fieldIs(f.name, "Upgrade"):
			return errHeadFallback
		case fieldIs(f.name, "Expect"):
			if !asciiEqualFold(f.value, "100-continue") {
				return errHeadFallback // net/http's 417
			}
			h.expect = true
		}
	}
	switch {
	case h.minor == 1 && !h.hasHost:
		return errHeadFallback // net/http's 400 "missing required Host header"
	case h.chunked && haveLength:
		return errHeadFallback
	case h.chunked:
		h.length = -1
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

// respHead is an instance's parsed answer head.
type respHead struct {
	minor  int
	status int
	reason []byte
	fields []field

	length  int64 // Content-Length (-1: none)
	chunked bool
	close   bool // the instance closes the connection after this answer
	trailer bool // a Trailer field announces trailers
	// connTokens: the Connection header names other headers (not forwarded).
	connTokens bool
}

// errAnswerFraming: an answer whose framing reads two ways (Content-Length with
// Transfer-Encoding, or Transfer-Encoding in HTTP/1.0; RFC 9112 6.1, 6.3). The loop does not
// guess which end the instance meant: the answer is refused as the instance's failure (502),
// and its connection is closed, since what follows on it cannot be trusted.
var errAnswerFraming = errors.New("the instance's answer is framed two ways (Content-Length with Transfer-Encoding, or Transfer-Encoding in HTTP/1.0)")

// parseResponseHead parses an answer head at the start of b.
func parseResponseHead(b []byte, h *respHead) (int, error) {
	e, err := lineEnd(b)
	if err != nil {
		return 0, err
	}
	line := b[:e]
	// HTTP/1.x SP 3DIGIT SP reason
	if len(line) < 13 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || line[12] != ' ' {
		return 0, errHeadFallback
	}
	switch line[7] {
	case '1':
		h.minor = 1
	case '0':
		h.minor = 0
	default:
		return 0, errHeadFallback
	}
	st := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, errHeadFallback
		}
		st = st*10 + int(c-'0')
	}
	if st < 100 {
		return 0, errHeadFallback
	}
	h.status = st
	h.reason = line[13:]
	for _, c := range h.reason {
		if c < ' ' && c != '\t' || c == 0x7f {
			return 0, errHeadFallback
		}
	}
	fields, n, err := parseFields(b[e+2:], h.fields[:0])
	h.fields = fields
	if err != nil {
		return 0, err
	}
	h.length, h.chunked, h.trailer, h.connTokens = -1, false, false, false
	h.close = h.minor == 0
	for _, f := range h.fields {
		switch {
		case fieldIs(f.name, "Content-Length"):
			v, ok := parseLength(f.value)
			if !ok || h.length >= 0 {
				return 0, errHeadFallback
			}
			h.length = v
		case fieldIs(f.name, "Transfer-Encoding"):
			if h.chunked || !asciiEqualFold(f.value, "chunked") {
				return 0, errHeadFallback
			}
			h.chunked = true
		case fieldIs(f.name, "Trailer"):
			h.trailer = true
		case fieldIs(f.name, "Connection"):
			for v := f.value; len(v) > 0; {
				var tok []byte
				tok, v = nextToken(v)
				switch {
				case len(tok) == 0:
				case asciiEqualFold(tok, "close"):
					h.close = true
				case asciiEqualFold(tok, "keep-alive"):
					if h.minor == 0 {
						h.close = false
					}
				default:
					h.connTokens = true
				}
			}
		}
	}
	if h.chunked && (h.length >= 0 || h.minor == 0) {
		return 0, errAnswerFraming
	}
	return e + 2 + n, nil
}

// fieldIs compares a field name with a canonical name, ignoring ASCII case.
func fieldIs(name []byte, canon string) bool {
	return len(name) == len(canon) && asciiEqualFold(name, canon)
}

// asciiEqualFold compares b and s ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// nextToken splits a comma-separated list: the first element (trimmed) and the rest.
func nextToken(v []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		tok, rest = v[:i], v[i+1:]
	} else {
		tok = v
	}
	return bytes.Trim(tok, " \t"), rest
}

// parseLength parses a Content-Length value: decimal digits only, at most 18 of them.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// listedIn reports whether a Connection field among fields names name.
func listedIn(fields []field, name []byte) bool {
	for _, f := range fields {
		if !fieldIs(f.name, "Connection") {
			continue
		}
		for v := f.value; len(v) > 0; {
			var tok []byte
			tok, v = nextToken(v)
			if len(tok) == len(name) && bytes.EqualFold(tok, name) {
				return true
			}
		}
	}
	return false
}

// hopField reports the hop-by-hop fields (RFC 9110 7.6.1) that the proxy does not forward,
// whichever way.
func hopField(name []byte) bool {
	switch len(name) {
	case 2:
		return fieldIs(name, "Te")
	case 7:
		return fieldIs(name, "Trailer") || fieldIs(name, "Upgrade")
	case 10:
		return fieldIs(name, "Connection") || fieldIs(name, "Keep-Alive")
	case 16:
		return fieldIs(name, "Proxy-Connection")
	case 17:
		return fieldIs(name, "Transfer-Encoding")
	case 18:
		return fieldIs(name, "Proxy-Authenticate")
	case 19:
		return fieldIs(name, "Proxy-Authorization")
	}
	return false
}
