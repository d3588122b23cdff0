package agent

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/httpjson"
)

// handleDial connects to ?network=&addr= from inside the pod and, once connected, upgrades the
// request to a raw byte stream between the client and that connection. A far dial that fails is
// answered 502 with the error, which names the address.
func (s *server) handleDial(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	network, addr := q.Get("network"), q.Get("addr")
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		writeError(w, errorf(errBad, "invalid network %q: use tcp, tcp4, tcp6 or unix", network))
		return
	}
	if addr == "" {
		writeError(w, errorf(errBad, "dial: no addr"))
		return
	}
	d := net.Dialer{Timeout: 30 * time.Second}
	far, err := d.DialContext(r.Context(), network, addr)
	if err != nil {
		httpjson.Error(w, http.StatusBadGateway, err.Error())
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		far.Close()
		writeError(w, errorf(errConflict, "dial: connection cannot be upgraded"))
		return
	}
	near, buf, err := hj.Hijack()
	if err != nil {
		far.Close()
		return
	}
	_ = near.SetDeadline(time.Time{}) // the server's timeouts do not apply to the stream
	_, err = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + dialUpgrade + "\r\n\r\n")
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		near.Close()
		far.Close()
		return
	}
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		near.Close()
		far.Close()
		return
	}
	s.conns[near] = struct{}{}
	s.conns[far] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		pipe(near, buf.Reader, far)
		s.mu.Lock()
		delete(s.conns, near)
		delete(s.conns, far)
		s.mu.Unlock()
	}()
}

// pipe copies both ways between a and b (reading a through ar, which holds what a sent before
// the upgrade) until both directions end, passing each end of stream on as a half-close, then
// closes both.
func pipe(a net.Conn, ar *bufio.Reader, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(b, ar)
		closeWrite(b)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	wg.Wait()
	a.Close()
	b.Close()
}

// closeWrite half-closes c when it can; otherwise the copy's end shows as a full close at the end.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
