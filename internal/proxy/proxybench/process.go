package proxybench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/httpecho"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/proxy/http1"
)

// target sends GET requests with the service header (ignored by the echo server when called
// directly), so that every path gets identical requests. It speaks HTTP/1.1 itself over a pool
// of keep-alive connections rather than through net/http's client: the load generator and the
// upstream share one CPU, and at 10k req/s the client's goroutines and per-request clones were
// what made the generator fall behind its schedule.
type target struct {
	addr    string
	req     []byte
	timeout time.Duration
	mu      sync.Mutex
	idle    []*clientConn
}

// maxIdleClientConns bounds the idle connections a target keeps: after a burst (a generator
// that fell behind sends its backlog at once) thousands of connections would otherwise stay
// open and, with the proxy's and the upstream's ends, exhaust the file descriptors.
const maxIdleClientConns = 256

type clientConn struct {
	c  net.Conn
	br *bufio.Reader
}

func newTarget(rawURL, service string, cfg Config) *target {
	addr := strings.TrimSuffix(strings.TrimPrefix(rawURL, "http://"), "/")
	req := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: continuum-bench\r\n"
	if service != "" {
		req += http1.ServiceHeader + ": " + service + "\r\n"
	}
	return &target{addr: addr, req: []byte(req + "\r\n"), timeout: cfg.Timeout}
}

func (t *target) get() (*clientConn, error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		cc := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return cc, nil
	}
	t.mu.Unlock()
	c, err := net.DialTimeout("tcp", t.addr, t.timeout)
	if err != nil {
		return nil, err
	}
	return &clientConn{c: c, br: bufio.NewReaderSize(c, 4<<10)}, nil
}

// Do sends one request and reads its answer to the end, within the context's deadline (else the
// timeout).
func (t *target) Do(ctx context.Context) error {
	cc, err := t.get()
	if err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(t.timeout)
	}
	cc.c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { cc.c.SetDeadline(time.Unix(1, 0)) })
	resp, err := t.exchange(cc)
	if !stop() || err != nil || resp.Close {
		cc.c.Close()
	} else {
		t.mu.Lock()
		keep := len(t.idle) < maxIdleClientConns
		if keep {
			t.idle = append(t.idle, cc)
		}
		t.mu.Unlock()
		if !keep {
			cc.c.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode)
	}
	return nil
}

func (t *target) exchange(cc *clientConn) (*http.Response, error) {
	if _, err := cc.c.Write(t.req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(cc.br, nil)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

// close closes the idle connections.
func (t *target) close() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, cc := range idle {
		cc.c.Close()
	}
}

type statusError int

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) ErrorType() string {
	if e >= 500 {
		return loadgen.ErrHTTP5xx
	}
	return loadgen.ErrHTTP4xx
}

// startUpstream serves internal/httpecho on a loopback port in this process.
func startUpstream(ctx context.Context) (string, func(), error) {
	srv, err := httpecho.New(httpecho.Config{Listen: "127.0.0.1:0", Name: "bench-upstream",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownTimeout: time.Second})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(sctx, ln)
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}

// proxyProc is the proxy binary running as a child process.
type proxyProc struct {
	cmd     *exec.Cmd
	url     string
	log     string
	version string
	done    chan struct{}
}

func (p *proxyProc) pid() int { return p.cmd.Process.Pid }

func startProxy(ctx context.Context, cfg Config, pn *pinning, bin, upstream string) (*proxyProc, error) {
	inst := filepath.Join(cfg.Dir, "instances.yaml")
	if err := os.WriteFile(inst, []byte(fmt.Sprintf("instances:\n  - {id: e1, service: echo, url: \"http://%s\", node: local}\n", upstream)), 0o644); err != nil {
		return nil, err
	}
	conf := filepath.Join(cfg.Dir, "proxy.yaml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("node: bench\nmax_inflight: %d\ndiscovery:\n  - file: instances.yaml\ndefaults:\n  strategy: qos\n  qos: {latency: 80ms, percentile: 95}\n", benchMaxConcurrent)), 0o644); err != nil {
		return nil, err
	}
	listen, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	admin, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	p := &proxyProc{url: "http://" + listen + "/", log: filepath.Join(cfg.Dir, "proxy.log"), done: make(chan struct{})}
	if out, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil {
		p.version = strings.TrimSpace(string(out))
	}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = pn.command(bin, "--config", conf, "--listen", listen, "--admin-listen", admin, "--node", "bench")
	p.cmd.Env = os.Environ()
	if cfg.ProxyGOMAXPROCS > 0 {
		p.cmd.Env = append(p.cmd.Env, "GOMAXPROCS="+strconv.Itoa(cfg.ProxyGOMAXPROCS))
	}
	return p, p.start(ctx, bin, logf, func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// start starts p.cmd with its output to logf and waits until ready says so, the process
// exits, or 10 s pass.
func (p *proxyProc) start(ctx context.Context, bin string, logf *os.File, ready func() bool) error {
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %s", bin, p.logTail())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("%s not ready after 10 s: %s", bin, p.logTail())
		}
	}
}

// startHAProxy runs HAProxy in the foreground (-db: no daemon, so its PID is the one measured)
// with one thread, keep-alive to the client and to the upstream, in front of upstream.
func startHAProxy(ctx context.Context, cfg Config, pn *pinning, upstream string) (*proxyProc, error) {
	listen, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(cfg.Dir, "haproxy.cfg")
	if err := os.WriteFile(conf, []byte(haproxyConfig(listen, upstream)), 0o644); err != nil {
		return nil, err
	}
	p := &proxyProc{url: "http://" + listen + "/", log: filepath.Join(cfg.Dir, "haproxy.log"), done: make(chan struct{})}
	if out, err := exec.CommandContext(ctx, cfg.HAProxyBin, "-c", "-f", conf).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s rejects the benchmark's configuration %s: %v: %s", cfg.HAProxyBin, conf, err, strings.TrimSpace(string(out)))
	}
	p.version = haproxyVersion(ctx, cfg.HAProxyBin)
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = pn.command(cfg.HAProxyBin, "-db", "-f", conf)
	return p, p.start(ctx, cfg.HAProxyBin, logf, func() bool {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// haproxyConfig is HAProxy set up as the proxy is in the benchmark: one thread, HTTP mode,
// keep-alive on both sides with server connections shared between clients (http-reuse
// always, as the proxy's pool does), X-Forwarded-For added as the proxy adds it, timeouts
// like the proxy's defaults, no logging (the proxy logs only failures).
func haproxyConfig(listen, upstream string) string {
	return fmt.Sprintf(`# written by continuum bench proxy
global
    nbthread 1
    maxconn %d

defaults
    mode http
    option http-keep-alive
    http-reuse always
    option forwardfor
    timeout connect 1s
    timeout client 2m
    timeout server 10s
    timeout http-request 10s
    timeout http-keep-alive 2m

frontend bench
    bind %s
    default_backend upstream

backend upstream
    server u1 %s
`, benchMaxConcurrent, listen, upstream)
}

// benchMaxConcurrent is how many requests each proxy admits at once: HAProxy's maxconn and the
// proxy's max_inflight (its default 512 would answer a burst from a load generator that fell
// behind with 503s where HAProxy queues).
const benchMaxConcurrent = 4096

// haproxyVersion is the first line of `haproxy -v` up to its " - " (which names a web site).
func haproxyVersion(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "-v").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	line, _, _ = strings.Cut(line, " - ")
	return strings.TrimSpace(line)
}

// stop asks the proxy to drain (SIGTERM) and kills it if it has not exited within 5 s.
func (p *proxyProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proxyProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
