package watchdog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// upstream is the http mode: one process serving HTTP on cfg.UpstreamAddr, started once and
// reused for every request. If it exits, requests get 502 and it is started again (after a
// second, so a handler that cannot start does not spin).
type upstream struct {
	cfg   *Config
	proxy *httputil.ReverseProxy
	up    atomic.Bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	closing bool
	done    chan struct{} // closed when the supervisor has stopped
}

func startUpstream(ctx context.Context, cfg *Config) (*upstream, error) {
	u := &upstream{cfg: cfg, done: make(chan struct{})}
	target := &url.URL{Scheme: "http", Host: cfg.UpstreamAddr}
	u.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		// One process serves requests one at a time; keeping connections costs it nothing
		// and saves a connect per request.
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			switch {
			case errors.Is(r.Context().Err(), context.DeadlineExceeded):
				http.Error(w, fmt.Sprintf("function exceeded its exec timeout of %v", cfg.ExecTimeout), http.StatusGatewayTimeout)
			case r.Context().Err() != nil: // the client left
			default:
				http.Error(w, "function upstream: "+err.Error(), http.StatusBadGateway)
			}
		},
	}
	cmd, exited, err := u.start(ctx)
	if err != nil {
		return nil, err
	}
	go u.supervise(cmd, exited)
	return u, nil
}

// start runs the process and waits until it accepts connections on the upstream address.
func (u *upstream) start(ctx context.Context) (*exec.Cmd, chan error, error) {
	cmd := exec.Command(u.cfg.Process[0], u.cfg.Process[1:]...)
	cmd.Env = append(os.Environ(), u.cfg.Env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start function process %s: %w", u.cfg.Process[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(u.cfg.ReadyTimeout)
	for {
		c, err := net.DialTimeout("tcp", u.cfg.UpstreamAddr, time.Second)
		if err == nil {
			c.Close()
			u.mu.Lock()
			u.cmd = cmd
			u.mu.Unlock()
			u.up.Store(true)
			return cmd, exited, nil
		}
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("function process exited before listening on %s: %v", u.cfg.UpstreamAddr, err)
		case <-ctx.Done():
			kill(cmd)
			<-exited
			return nil, nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			kill(cmd)
			<-exited
			return nil, nil, fmt.Errorf("function process not listening on %s after %v", u.cfg.UpstreamAddr, u.cfg.ReadyTimeout)
		}
	}
}

// supervise restarts the process whenever it exits, until close.
func (u *upstream) supervise(cmd *exec.Cmd, exited chan error) {
	defer close(u.done)
	for {
		err := <-exited
		u.up.Store(false)
		u.mu.Lock()
		closing := u.closing
		u.mu.Unlock()
		if closing {
			return
		}
		u.cfg.Logger.Warn("function process exited; restarting", "pid", cmd.Process.Pid, "err", err)
		for {
			time.Sleep(time.Second)
			u.mu.Lock()
			closing := u.closing
			u.mu.Unlock()
			if closing {
				return
			}
			var serr error
			cmd, exited, serr = u.start(context.Background())
			if serr == nil {
				break
			}
			u.cfg.Logger.Warn("function process restart failed", "err", serr)
		}
	}
}

func (u *upstream) healthy() bool { return u.up.Load() }

func (u *upstream) invoke(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), u.cfg.ExecTimeout)
	defer cancel()
	u.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// close stops the process (SIGTERM, then SIGKILL after 5 s) and its supervisor.
func (u *upstream) close() {
	u.mu.Lock()
	u.closing = true
	cmd := u.cmd
	u.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-u.done:
		case <-time.After(5 * time.Second):
			kill(cmd)
			<-u.done
		}
	}
}

func kill(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
