package proxybench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/httpecho"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/proxy"
)

// target sends GET requests with the service header (ignored by the echo server when
// called directly), so both paths send identical requests.
type target struct {
	client  *http.Client
	url     string
	service string
}

func newTarget(url, service string, cfg Config) *target {
	tr := &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: cfg.Timeout}).DialContext}
	return &target{client: &http.Client{Transport: tr}, url: url, service: service}
}

func (t *target) Do(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return err
	}
	if t.service != "" {
		req.Header.Set(proxy.ServiceHeader, t.service)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode)
	}
	return err
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

func startProxy(ctx context.Context, cfg Config, bin, upstream string) (*proxyProc, error) {
	inst := filepath.Join(cfg.Dir, "instances.yaml")
	if err := os.WriteFile(inst, []byte(fmt.Sprintf("instances:\n  - {id: e1, service: echo, url: \"http://%s\", node: local}\n", upstream)), 0o644); err != nil {
		return nil, err
	}
	conf := filepath.Join(cfg.Dir, "proxy.yaml")
	if err := os.WriteFile(conf, []byte("node: bench\ndiscovery:\n  - file: instances.yaml\ndefaults:\n  strategy: qos\n  qos: {latency: 80ms, percentile: 95}\n"), 0o644); err != nil {
		return nil, err
	}
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
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
	p.cmd = exec.Command(bin, "--config", conf, "--listen", listen, "--admin-listen", admin, "--node", "bench")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited: %s", bin, p.logTail())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after 10 s: %s", bin, p.logTail())
		}
	}
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

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
