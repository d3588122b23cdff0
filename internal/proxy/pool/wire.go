package pool

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/http1"
)

// HopHeader reports the hop-by-hop headers (RFC 9110 7.6.1) that a proxy does not forward.
func HopHeader(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// ConnectionListed reports whether the Connection header values name k (case-insensitively).
func ConnectionListed(conn []string, k string) bool {
	for _, v := range conn {
		for v != "" {
			var f string
			f, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// UpgradeType is the protocol an Upgrade request asks for ("" if it is not one).
func UpgradeType(h http.Header) string {
	if !ConnectionListed(h["Connection"], "upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}

// WriteRequest writes r's head (and body) to uc as the proxy forwards it: hop-by-hop headers
// dropped, X-Forwarded-For appended to, X-Forwarded-Host and -Proto set, the body framed by
// its length or chunked.
func WriteRequest(uc *UpConn, r *http.Request, body io.Reader, instHost, upgrade string, buf []byte) error {
	bw := uc.Bw
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(originForm(r))
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	host := r.Host
	if host == "" {
		host = instHost // an HTTP/1.0 client that named the service by header only
	}
	bw.WriteString(host)
	bw.WriteString("\r\n")
	conn := r.Header["Connection"]
	var xff []string
	for k, vv := range r.Header {
		switch k {
		case "X-Forwarded-For":
			xff = vv
			continue
		case "Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto", "Expect", "Content-Length", "Host":
			continue
		case "Te":
			// "TE: trailers" is the one value that passes (gRPC needs it).
			if ConnectionListed(vv, "trailers") {
				bw.WriteString("Te: trailers\r\n")
			}
			continue
		}
		if HopHeader(k) || (len(conn) > 0 && ConnectionListed(conn, k)) {
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("X-Forwarded-For: ")
	for _, v := range xff {
		bw.WriteString(v)
		bw.WriteString(", ")
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	bw.WriteString(host)
	bw.WriteString("\r\nX-Forwarded-Host: ")
	bw.WriteString(r.Host)
	if r.TLS != nil {
		bw.WriteString("\r\nX-Forwarded-Proto: https\r\n")
	} else {
		bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	}
	if upgrade != "" {
		bw.WriteString("Connection: Upgrade\r\nUpgrade: ")
		bw.WriteString(upgrade)
		bw.WriteString("\r\n")
	}
	hasBody := body != nil
	switch {
	case hasBody && r.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.ContentLength, 10))
		bw.WriteString("\r\n\r\n")
		if n, err := io.CopyBuffer(bw, io.LimitReader(body, r.ContentLength), buf); err != nil {
			return err
		} else if n < r.ContentLength {
			return ClientBodyError(io.ErrUnexpectedEOF)
		}
	case hasBody && r.ContentLength < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		cw := httputil.NewChunkedWriter(bw)
		if _, err := io.CopyBuffer(cw, body, buf); err != nil {
			return err
		}
		cw.Close()
		bw.WriteString("\r\n")
	default:
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
		bw.WriteString("\r\n")
	}
	return bw.Flush()
}

// originForm is the request target as the client sent it, in origin form (the path and query
// of an absolute-form target, as sent). Never r.URL re-encoded: net/http's URL decodes the path
// and EscapedPath encodes it again its own way ("%2F" becomes "/" for an absolute-form target,
// "{" becomes "%7B"), so the instance would see another path than the one routing saw and the
// client sent, as the loop forwards its bytes untouched.
func originForm(r *http.Request) string {
	u := r.RequestURI
	if strings.HasPrefix(u, "/") {
		return u
	}
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			if rest[i] == '?' {
				return "/" + rest[i:]
			}
			return rest[i:]
		}
		return "/"
	}
	return r.URL.RequestURI() // "*" (OPTIONS) and the like
}

// errNoAnswer: the instance closed the connection before any byte of an answer.
var ErrNoAnswer = errors.New("connection closed before an answer")

// ReadResponse reads the instance's answer headers, skipping 1xx interim answers but 101.
func ReadResponse(uc *UpConn, r *http.Request) (*http.Response, error) {
	for {
		uc.headLeft = maxAnswerHead
		b, _ := uc.Br.Peek(uc.Br.Buffered())
		uc.headBytes = append(uc.headBytes[:0], b...)
		resp, err := http.ReadResponse(uc.Br, r)
		uc.headLeft = 0
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, ErrNoAnswer
			}
			return nil, err
		}
		n, _ := http1.HeadEnd(uc.headBytes, 0)
		twoWays := n > 0 && http1.AnswerFramedTwoWays(uc.headBytes[:n])
		if cap(uc.headBytes) > 16<<10 {
			uc.headBytes = nil // a long head's bytes are not kept with the connection
		}
		if twoWays {
			return nil, http1.ErrAnswerFraming // the body is not drained: the caller closes the connection
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close()
	}
}

// ALongTimeAgo is a deadline in the past: setting it interrupts a connection's blocked I/O.
var ALongTimeAgo = time.Unix(1, 0)

// clientBodyError marks a failure to read the request body from the client (not the
// instance's failure, and not retried: the body is gone).
type ClientBodyErr struct{ Err error }

func (e ClientBodyErr) Error() string {
	return "reading the request body from the client: " + e.Err.Error()
}
func (e ClientBodyErr) Unwrap() error { return e.Err }

func ClientBodyError(err error) error { return ClientBodyErr{err} }

func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
