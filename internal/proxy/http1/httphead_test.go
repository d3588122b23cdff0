package http1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"testing"
)

// The loop's parser may decline anything (net/http then serves it), but what it accepts,
// net/http must accept too and read the same way: method, target, Host, framing, and whether
// the connection stays open. FuzzRequestHead checks that on every input, with net/http's
// ReadRequest as the reference.
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: dps\r\n\r\n",
		"GET /a?b=c HTTP/1.1\r\nHost: dps.example:80\r\nX-Continuum-Service: dps\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"PUT /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\ndata",
		"GET /ten HTTP/1.0\r\nX-Continuum-Service: dps\r\n\r\n",
		"GET /ka HTTP/1.0\r\nConnection: keep-alive\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h RequestHead
		n, err := ParseRequestHead(b, &h)
		if err != nil {
			if err != ErrHeadFallback && err != ErrHeadIncomplete {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n > len(b) || !bytes.HasSuffix(b[:n], []byte("\r\n\r\n")) {
			t.Fatalf("head length %d of %q", n, b)
		}
		req, rerr := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if rerr != nil {
			t.Fatalf("the loop accepts %q, net/http does not: %v", b[:n], rerr)
		}
		if req.Method != string(h.Method) || req.RequestURI != string(h.URI) {
			t.Fatalf("%q: method/target %q %q, net/http %q %q", b[:n], h.Method, h.URI, req.Method, req.RequestURI)
		}
		if req.Host != string(h.Host) {
			t.Fatalf("%q: host %q, net/http %q", b[:n], h.Host, req.Host)
		}
		switch {
		case h.Length < 0:
			if len(req.TransferEncoding) != 1 || req.TransferEncoding[0] != "chunked" {
				t.Fatalf("%q: chunked, net/http %v", b[:n], req.TransferEncoding)
			}
		case req.ContentLength != h.Length:
			t.Fatalf("%q: length %d, net/http %d", b[:n], h.Length, req.ContentLength)
		}
		if h.CloseAfter != req.Close {
			t.Fatalf("%q: close %v, net/http %v", b[:n], h.CloseAfter, req.Close)
		}
		if h.NService > 0 && req.Header.Values(ServiceHeader)[0] != string(h.Service) {
			t.Fatalf("%q: service %q, net/http %q", b[:n], h.Service, req.Header.Values(ServiceHeader))
		}
	})
}

// FuzzResponseHead: what the loop accepts of an instance's answer head, net/http's
// ReadResponse reads the same way (status, framing, close).
func FuzzResponseHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h ResponseHead
		n, err := ParseResponseHead(b, &h)
		if err != nil {
			if err != ErrHeadFallback && err != ErrHeadIncomplete && err != ErrAnswerFraming {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n > len(b) || !bytes.HasSuffix(b[:n], []byte("\r\n\r\n")) {
			t.Fatalf("head length %d of %q", n, b)
		}
		resp, rerr := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), &http.Request{Method: http.MethodGet})
		if rerr != nil {
			t.Fatalf("the loop accepts %q, net/http does not: %v", b[:n], rerr)
		}
		if h.Status < 200 {
			return // the loop skips interim answers; net/http returns them
		}
		if resp.StatusCode != h.Status {
			t.Fatalf("%q: status %d, net/http %d", b[:n], h.Status, resp.StatusCode)
		}
		switch {
		case h.Chunked:
			if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
				t.Fatalf("%q: chunked, net/http %v", b[:n], resp.TransferEncoding)
			}
		case h.Status == http.StatusNoContent || h.Status == http.StatusNotModified:
		case resp.ContentLength != h.Length:
			t.Fatalf("%q: length %d, net/http %d", b[:n], h.Length, resp.ContentLength)
		}
		// The loop may close where net/http would keep the connection (never the reverse).
		if resp.Close && !h.Close && !(h.Length < 0 && !h.Chunked) {
			t.Fatalf("%q: net/http closes, the loop would keep the connection", b[:n])
		}
	})
}

func TestRequestHeadDeclines(t *testing.T) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\n\r\n", // no Host
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n continued\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n",
		"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: 1\r\n", maxHeaders) + "\r\n",
	} {
		var h RequestHead
		if _, err := ParseRequestHead([]byte(s), &h); err != ErrHeadFallback {
			t.Errorf("%q: %v, want errHeadFallback", s, err)
		}
	}
	full := "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
	for i := range len(full) {
		var h RequestHead
		if _, err := ParseRequestHead([]byte(full[:i]), &h); err != ErrHeadIncomplete {
			t.Errorf("prefix %q: %v, want errHeadIncomplete", full[:i], err)
		}
	}
	var h RequestHead
	n, err := ParseRequestHead([]byte(full+"abc"), &h)
	if err != nil || n != len(full) || h.Length != 3 || string(h.Host) != "a" || string(h.URI) != "/x" {
		t.Fatalf("%q: n %d, err %v, head %+v", full, n, err, h)
	}
}

func TestParseHex(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "a": 10, "FF": 255, "00010": 16, "7ffffffffffffff": 0x7ffffffffffffff} {
		if n, ok := parseHex([]byte(s)); !ok || n != want {
			t.Errorf("%q: %d %v, want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"", "g", "-1", "1 ", strconv.Itoa(1) + "x", "1234567890abcdef"} {
		if _, ok := parseHex([]byte(s)); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

// FuzzChunkedBody: a chunked body the loop decodes (copyChunked) decodes to the same bytes
// with net/http's chunked reader, and re-encoded by the loop it decodes to them again.
func FuzzChunkedBody(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
		"0\r\n\r\n",
		"A\r\n0123456789\r\n0\r\n\r\n",
		"5\r\nhell\r\n0\r\n\r\n",
		"g\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var plain bytes.Buffer
		pw := bufio.NewWriter(&plain)
		if err := CopyChunked(pw, bufio.NewReader(bytes.NewReader(b)), false, false, func(err error) error { return err }); err != nil {
			return
		}
		pw.Flush()
		ref, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("%q: the loop decodes %q, net/http fails: %v", b, plain.Bytes(), err)
		}
		if !bytes.Equal(ref, plain.Bytes()) {
			t.Fatalf("%q: the loop decodes %q, net/http %q", b, plain.Bytes(), ref)
		}
		var chunked bytes.Buffer
		cw := bufio.NewWriter(&chunked)
		if err := CopyChunked(cw, bufio.NewReader(bytes.NewReader(b)), true, true, func(err error) error { return err }); err != nil {
			t.Fatalf("%q: decodes but does not re-encode: %v", b, err)
		}
		cw.Flush()
		again, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(chunked.Bytes())))
		if err != nil || !bytes.Equal(again, ref) {
			t.Fatalf("%q re-encoded as %q decodes to %q, %v", b, chunked.Bytes(), again, err)
		}
	})
}
