package dataplane

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/http1"
	"github.com/continuum-project/continuum/internal/proxy/pool"
)

// The loop's side of an instance's answer: reading its head (recv) and relaying it to the
// client (relayAnswer), and the proxy's own error answers.

// recv reads the answer's head into cc.resp (or, for a head outside the loop's parser, with
// net/http's parser into cc.fbResp). 1xx interim answers are skipped.
func (cc *clientConn) recv(uc *pool.UpConn) (int, bool, error) {
	cc.fbResp = nil
	for {
		b, err := uc.Br.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, false, pool.ErrNoAnswer
			}
			return 0, false, err
		}
		_ = b
		var n int
		for {
			buffered := uc.Br.Buffered()
			b, _ := uc.Br.Peek(buffered)
			n, err = http1.ParseResponseHead(b, &cc.resp)
			if err != http1.ErrHeadIncomplete || buffered == uc.Br.Size() {
				break
			}
			if _, err := uc.Br.Peek(buffered + 1); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return 0, false, err
			}
		}
		if err == http1.ErrAnswerFraming {
			return 0, false, err
		}
		if err != nil {
			// Not the loop's: net/http's parser reads it (1xx skipped there).
			resp, err := pool.ReadResponse(uc, &http.Request{Method: cc.method()})
			if err != nil {
				return 0, false, err
			}
			if resp.StatusCode == http.StatusSwitchingProtocols {
				resp.Body.Close()
				return 0, false, errors.New("the instance switched protocols though no upgrade was asked for")
			}
			cc.fbResp = resp
			return resp.StatusCode, !resp.Close, nil
		}
		switch st := cc.resp.Status; {
		case st == http.StatusSwitchingProtocols:
			return 0, false, errors.New("the instance switched protocols though no upgrade was asked for")
		case st < 200:
			uc.Br.Discard(n) // interim answer (100 Continue, 103 Early Hints)
			continue
		}
		cc.respLen = n
		keep := !cc.resp.Close && (cc.resp.Length >= 0 || cc.resp.Chunked || !cc.respHasBody())
		return cc.resp.Status, keep, nil
	}
}

func (cc *clientConn) respStatus() int {
	if cc.fbResp != nil {
		return cc.fbResp.StatusCode
	}
	return cc.resp.Status
}

// respHasBody: the answer carries a body (RFC 9112 6.3: not to HEAD, not 1xx, 204, 304).
func (cc *clientConn) respHasBody() bool {
	st := cc.resp.Status
	return !cc.isHead && st != http.StatusNoContent && st != http.StatusNotModified
}

// relayAnswer writes the answer's head and body to the client. It returns whether the client
// connection and the instance's connection may carry more requests, and an error when either
// side failed (an upstreamBodyError when the instance's side did).
func (cc *clientConn) relayAnswer(uc *pool.UpConn, in *pool.Instance, keepClient, keepUp bool) (bool, bool, error) {
	if cc.fbResp != nil {
		return cc.relayHTTPResponse(uc, in, keepClient, keepUp)
	}
	r := &cc.resp
	bw := cc.bw
	chunkedOut := false
	hasBody := cc.respHasBody()
	if hasBody && r.Length < 0 {
		if cc.req.Minor == 1 {
			chunkedOut = true
		} else {
			keepClient = false // an HTTP/1.0 client learns the end from the close
		}
	}
	if cc.srv.Shutting.Load() {
		keepClient = false
	}
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(r.Status), 10))
	bw.WriteByte(' ')
	bw.Write(r.Reason)
	bw.WriteString("\r\n")
	for _, f := range r.Fields {
		switch {
		case http1.FieldIs(f.Name, "Content-Length"):
			continue
		case http1.FieldIs(f.Name, "Trailer"):
			if !chunkedOut {
				continue
			}
		case http1.HopField(f.Name), r.ConnTokens && http1.ListedIn(r.Fields, f.Name), http1.FieldIs(f.Name, http1.InstanceHeader):
			continue
		}
		bw.Write(f.Name)
		bw.WriteString(": ")
		bw.Write(f.Value)
		bw.WriteString("\r\n")
	}
	bw.WriteString(http1.InstanceHeader + ": ")
	WriteFieldValue(bw, in.ID)
	bw.WriteString("\r\n")
	switch {
	case r.Length >= 0 && (hasBody || cc.isHead || r.Status == http.StatusNotModified):
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), r.Length, 10))
		bw.WriteString("\r\n")
	case chunkedOut:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	switch {
	case !keepClient:
		bw.WriteString("Connection: close\r\n")
	case cc.req.Minor == 0:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	uc.Br.Discard(cc.respLen)
	if hasBody && (r.Length < 0 || int64(uc.Br.Buffered()) < r.Length) {
		// The rest of the body may take longer than the service's timeout, but not longer
		// than the client stays: while the body is awaited, the client is checked on.
		uc.Watch = cc.c
	}
	var err error
	switch {
	case !hasBody:
	case r.Length >= 0:
		err = http1.CopyN(bw, uc.Br, r.Length, http1.UpstreamError)
	case r.Chunked:
		err = http1.CopyChunked(bw, uc.Br, chunkedOut, chunkedOut, http1.UpstreamError)
	default:
		err = http1.CopyToEOF(bw, uc.Br, chunkedOut)
		keepUp = false
	}
	if err == nil {
		err = bw.Flush()
	}
	return keepClient, keepUp && err == nil, err
}

// relayHTTPResponse is relayAnswer for an answer net/http's parser read.
func (cc *clientConn) relayHTTPResponse(uc *pool.UpConn, in *pool.Instance, keepClient, keepUp bool) (bool, bool, error) {
	resp := cc.fbResp
	uc.Watch = cc.c         // the body may take as long as the client stays (upReader)
	defer resp.Body.Close() // net/http's body; the connection is the caller's to close or pool
	bw := cc.bw
	hasBody := !cc.isHead && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	chunkedOut := false
	if hasBody && resp.ContentLength < 0 {
		if cc.req.Minor == 1 {
			chunkedOut = true
		} else {
			keepClient = false
		}
	}
	if cc.srv.Shutting.Load() {
		keepClient = false
	}
	fmt.Fprintf(bw, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	conn := resp.Header["Connection"]
	for k, vv := range resp.Header {
		if pool.HopHeader(k) || k == "Content-Length" || k == http1.InstanceHeader || (len(conn) > 0 && pool.ConnectionListed(conn, k)) {
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString(http1.InstanceHeader + ": ")
	WriteFieldValue(bw, in.ID)
	bw.WriteString("\r\n")
	length := resp.ContentLength
	if resp.StatusCode == http.StatusNotModified {
		// net/http's parser says 0 for every 304 (it has no body); the Content-Length the
		// instance sent, if any, is the length of the representation (RFC 9110 8.6) and passes
		// on as is, as on the loop's own path.
		length = -1
		if v := resp.Header["Content-Length"]; len(v) == 1 {
			if n, ok := http1.ParseLength([]byte(v[0])); ok {
				length = n
			}
		}
	}
	switch {
	case length >= 0 && (hasBody || cc.isHead || resp.StatusCode == http.StatusNotModified):
		bw.WriteString("Content-Length: " + strconv.FormatInt(length, 10) + "\r\n")
	case chunkedOut:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	switch {
	case !keepClient:
		bw.WriteString("Connection: close\r\n")
	case cc.req.Minor == 0:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	var err error
	if hasBody {
		var w io.Writer = bw
		var cw io.WriteCloser
		if chunkedOut {
			cw = http1.NewChunkWriter(bw)
			w = cw
		}
		bp := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(flushingWriter{w: w, bw: bw}, resp.Body, *bp)
		copyBufs.Put(bp)
		if err != nil {
			err = http1.UpstreamError(err)
		} else if cw != nil {
			cw.Close()
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	return keepClient, keepUp && err == nil, err
}

// WriteFieldValue writes v as a header field's value, leaving out the bytes a field value
// must not hold (CR, LF, NUL and the other controls but HT; RFC 9110 5.5): the loop writes the
// values it makes itself, and no such value, whatever its origin, can end the field or the
// head early. (The values the loop relays were checked by its parser or net/http's.)
func WriteFieldValue(bw *bufio.Writer, v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			for j := 0; j < len(v); j++ {
				if c := v[j]; c >= ' ' && c != 0x7f || c == '\t' {
					bw.WriteByte(c)
				}
			}
			return
		}
	}
	bw.WriteString(v)
}

// flushingWriter writes through w and flushes bw after each write (net/http's body reads
// return what has arrived, so each write is a piece the client should see without delay).
type flushingWriter struct {
	w  io.Writer
	bw *bufio.Writer
}

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.bw.Flush()
	}
	return n, err
}

// answerError answers the proxy's own failure: a JSON body {"error": ..., "service": ...};
// retryAfter > 0 adds Retry-After in whole seconds (rounded up). It reports whether the
// connection can go on.
func (cc *clientConn) answerError(code int, msg, service string, retryAfter time.Duration, keepClient bool) bool {
	body, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Service string `json:"service,omitempty"`
	}{msg, service})
	body = append(body, '\n')
	if !cc.bodyDone && cc.req.Length > 0 && !cc.headConsumed && cc.br.Buffered() >= cc.headLen+int(cc.req.Length) {
		// The whole body has arrived: skip it, and the connection can go on.
		cc.consumeHead()
		cc.br.Discard(int(cc.req.Length))
		cc.bodyDone = true
	}
	if !cc.bodyDone || cc.srv.Shutting.Load() {
		keepClient = false
	}
	bw := cc.bw
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: %d\r\n", code, http.StatusText(code), len(body))
	if retryAfter > 0 {
		fmt.Fprintf(bw, "Retry-After: %d\r\n", int(math.Ceil(retryAfter.Seconds())))
	}
	switch {
	case !keepClient:
		bw.WriteString("Connection: close\r\n")
	case cc.req.Minor == 0:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	if !cc.isHead {
		bw.Write(body)
	}
	return bw.Flush() == nil && keepClient
}
