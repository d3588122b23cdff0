package agent

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// tunnelProtocol is the Upgrade token of a dial: after the 101 answer the connection carries the
// dialled connection's bytes both ways.
const tunnelProtocol = "continuum-tunnel"

func (s *server) handleDial(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	network, addr := q.Get("network"), q.Get("addr")
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		writeError(w, badRequest("dial: network %q: want tcp, tcp4 or tcp6", network))
		return
	}
	if addr == "" {
		writeError(w, badRequest("dial: addr: want host:port"))
		return
	}
	if r.Header.Get("Upgrade") != tunnelProtocol {
		writeError(w, badRequest("dial: want Upgrade: %s", tunnelProtocol))
		return
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	far, err := d.DialContext(r.Context(), network, addr)
	if err != nil {
		http.Error(w, "dial "+addr+" from node "+s.opts.Node+": "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		far.Close()
		writeError(w, badRequest("dial: connection cannot be taken over"))
		return
	}
	near, rw, err := hj.Hijack()
	if err != nil {
		far.Close()
		return
	}
	_, _ = io.WriteString(near, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+tunnelProtocol+"\r\n\r\n")
	splice(&bufferedConn{Conn: near, r: rw.Reader}, far)
}

// splice copies both ways until both directions have ended, passing a half-close on.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// bufferedConn is a connection whose first bytes were read ahead into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the connection underneath when it can.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
