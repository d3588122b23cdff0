package proxy

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestProxyConflictingFramingRefused (issue 41, defect 6): a request whose framing can be read
// two ways (Content-Length with Transfer-Encoding; Transfer-Encoding in HTTP/1.0) is answered
// 400 and its connection closed (RFC 9112 6.1), whichever server reads it; it never reaches
// an instance.
func TestProxyConflictingFramingRefused(t *testing.T) {
	var reached atomic.Int64
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) {
		if r.URL.Path != "/ok" {
			reached.Add(1)
		}
		io.WriteString(c, ownAnswer(r))
	})
	tp := oneService(t, ri.url, nil)
	heads := map[string]string{
		"cl+te":       "POST /smuggle HTTP/1.1\r\nHost: dps\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"te+cl":       "POST /smuggle HTTP/1.1\r\nHost: dps\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
		"1.0+te":      "POST /smuggle HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
		"1.0+te-only": "POST /smuggle HTTP/1.0\r\nHost: dps\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"big cl+te":   "POST /smuggle HTTP/1.1\r\nHost: dps\r\n" + bigField + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"big 1.0+te":  "POST /smuggle HTTP/1.0\r\nHost: dps\r\n" + bigField + "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
	}
	for name, raw := range heads {
		c := dialRaw(t, tp)
		io.WriteString(c.c, raw)
		resp, _ := c.read(http.MethodPost)
		if resp.StatusCode != http.StatusBadRequest || !c.closed() {
			t.Errorf("%s: %d, want 400 and the connection closed", name, resp.StatusCode)
		}
	}
	// A head net/http serves (over the loop's buffer) is the connection's last: the next
	// head is read, and checked, by the loop on a new connection.
	c := dialRaw(t, tp)
	resp, body := c.roundTrip("GET /ok HTTP/1.1\r\nHost: dps\r\n"+bigField+"\r\n", http.MethodGet)
	if body != "own /ok" || !resp.Close || !c.closed() {
		t.Errorf("a head net/http served: %d %q close=%v, want the answer and the connection closed", resp.StatusCode, body, resp.Close)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d request(s) with conflicting framing reached the instance", n)
	}
}
