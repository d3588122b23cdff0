package proxy

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestProxyNewConnGetsHeaderTimeout (issue 41, defect 5): a connection that sends nothing is
// closed after read_header_timeout, as one that sends part of a head is.
func TestProxyNewConnGetsHeaderTimeout(t *testing.T) {
	ri := startRawInstance(t, func(c net.Conn, r *http.Request, n int64) { io.WriteString(c, ownAnswer(r)) })
	tp := oneService(t, ri.url, func(cfg *Config) { cfg.ReadHeaderTimeout = 200 * time.Millisecond })
	c := dialRaw(t, tp)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.br.ReadByte()
	if err != io.EOF {
		t.Fatalf("a silent new connection: %v, want it closed (EOF) after read_header_timeout", err)
	}
}
