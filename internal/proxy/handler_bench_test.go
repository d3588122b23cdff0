package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/continuum-project/continuum/internal/proxy/http1"
)

// BenchmarkProxyRequest is the request path in process (no network between client, proxy
// and upstream but loopback): what a request costs the proxy in CPU and allocations.
func BenchmarkProxyRequest(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	cfg := testConfig(newTestSource(inst("a", "dps", up.URL)))
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	p.u.Update(0, *cfg.Sources[0].(*testSource).first)
	p.rt.SetReady()
	h := p.Handler()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(http1.ServiceHeader, "dps")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkProxyLoop is a request through the server loop over loopback, with a client and
// an instance that allocate nothing (canned bytes), so that allocs/op is the proxy's.
func BenchmarkProxyLoop(b *testing.B) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go cannedServer(c, answer)
		}
	}()
	cfg := testConfig(newTestSource(inst("a", "dps", "http://"+up.Addr().String())))
	tp := startProxy(b, cfg)
	c, err := net.Dial("tcp", tp.url[len("http://"):])
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /bench HTTP/1.1\r\nHost: dps\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		// The answer ends with its 2-byte body "ok".
		n := 0
		for n < 2 || string(buf[n-2:n]) != "ok" {
			k, err := c.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += k
		}
	}
}

// cannedServer answers every request head on c (up to its blank line) with answer.
func cannedServer(c net.Conn, answer string) {
	defer c.Close()
	buf := make([]byte, 4096)
	resp := []byte(answer)
	n := 0
	for {
		k, err := c.Read(buf[n:])
		if err != nil {
			return
		}
		n += k
		for {
			i := bytesIndex(buf[:n], "\r\n\r\n")
			if i < 0 {
				break
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
			n = copy(buf, buf[i+4:n])
		}
	}
}

func bytesIndex(b []byte, sep string) int {
	for i := 0; i+len(sep) <= len(b); i++ {
		if string(b[i:i+len(sep)]) == sep {
			return i
		}
	}
	return -1
}
