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

	"github.com/continuum-project/continuum/internal/faas/copybuf"
	"github.com/continuum-project/continuum/internal/procstat"
)

// upstream is the http mode: one process serving HTTP on cfg.UpstreamAddr, started once and
// reused for every request. If it exits, requests get 502 and it is started again (after a
// second, so a handler that cannot start does not spin).
type upstream struct {
	cfg   *Config
	proxy *httputil.ReverseProxy
	up    atomic.Bool

	mu      sync.Mutex
	proc    *process
	closing bool
	done    chan struct{} // closed when the supervisor has stopped
}

// process is a running upstream: exec'd by the watchdog (its own process group) or forked by
// a zygote (not our child: its end is found by polling).
type process struct {
	pid    int
	group  bool       // signal the whole process group
	exited chan error // receives once when it has exited
}

func (p *process) signal(sig syscall.Signal) {
	if p.group {
		_ = syscall.Kill(-p.pid, sig)
	} else {
		_ = syscall.Kill(p.pid, sig)
	}
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
		BufferPool:    copybuf.Shared,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				// A chunked body went over the limit while it streamed. The upstream got a
				// body cut before its last chunk, which no HTTP server takes for complete;
				// the client gets the classic mode's answer.
				http.Error(w, fmt.Sprintf("body larger than the limit of %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			case errors.Is(r.Context().Err(), context.DeadlineExceeded):
				http.Error(w, fmt.Sprintf("function exceeded its exec timeout of %v", cfg.ExecTimeout), http.StatusGatewayTimeout)
			case r.Context().Err() != nil: // the client left
			default:
				http.Error(w, "function upstream: "+err.Error(), http.StatusBadGateway)
			}
		},
	}
	p, err := u.start(ctx)
	if err != nil {
		return nil, err
	}
	go u.supervise(p)
	return u, nil
}

// launch starts the process: exec'd, or forked by the zygote.
func (u *upstream) launch() (*process, error) {
	if u.cfg.Zygote != "" {
		return spawnFromZygote(u.cfg.Zygote, u.cfg.UpstreamAddr, u.cfg.ExecTimeout)
	}
	cmd := exec.Command(u.cfg.Process[0], u.cfg.Process[1:]...)
	cmd.Env = append(os.Environ(), u.cfg.Env...)
	cmd.Stdout, cmd.Stderr = u.cfg.Log, u.cfg.Log
	// With a Log that is not a file, output is copied through a pipe that a process the
	// function started may hold open: the exit must be seen without waiting for it.
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start function process %s: %w", u.cfg.Process[0], err)
	}
	p := &process{pid: cmd.Process.Pid, group: true, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// start launches the process and waits until it accepts connections on the upstream address.
func (u *upstream) start(ctx context.Context) (*process, error) {
	p, err := u.launch()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(u.cfg.ReadyTimeout)
	for {
		c, err := net.DialTimeout("tcp", u.cfg.UpstreamAddr, time.Second)
		if err == nil {
			c.Close()
			u.mu.Lock()
			u.proc = p
			u.mu.Unlock()
			u.up.Store(true)
			return p, nil
		}
		select {
		case err := <-p.exited:
			return nil, fmt.Errorf("function process exited before listening on %s: %v", u.cfg.UpstreamAddr, err)
		case <-ctx.Done():
			p.signal(syscall.SIGKILL)
			<-p.exited
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.signal(syscall.SIGKILL)
			<-p.exited
			return nil, fmt.Errorf("function process not listening on %s after %v", u.cfg.UpstreamAddr, u.cfg.ReadyTimeout)
		}
	}
}

// supervise restarts the process whenever it exits, until close.
func (u *upstream) supervise(p *process) {
	defer close(u.done)
	for {
		err := <-p.exited
		u.up.Store(false)
		if u.isClosing() {
			return
		}
		u.cfg.Logger.Warn("function process exited; restarting", "pid", p.pid, "err", err)
		for {
			time.Sleep(time.Second)
			if u.isClosing() {
				return
			}
			var serr error
			if p, serr = u.start(context.Background()); serr == nil {
				if u.isClosing() { // close came while it started: it may not have seen p
					p.signal(syscall.SIGKILL)
					<-p.exited
					return
				}
				break
			}
			u.cfg.Logger.Warn("function process restart failed", "err", serr)
		}
	}
}

func (u *upstream) isClosing() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closing
}

func (u *upstream) healthy() bool { return u.up.Load() }

func (u *upstream) cpuSeconds() float64 {
	u.mu.Lock()
	p := u.proc
	u.mu.Unlock()
	if p == nil {
		return 0
	}
	cpu, _ := procstat.CPUSeconds(p.pid, true) // 0 when it cannot be read
	return cpu
}

func (u *upstream) invoke(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), u.cfg.ExecTimeout)
	defer cancel()
	u.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// close stops the process (SIGTERM, then SIGKILL after 5 s) and its supervisor. It signals
// whichever process is current until the supervisor is done, as a restart may be under way.
func (u *upstream) close() {
	u.mu.Lock()
	u.closing = true
	u.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		u.mu.Lock()
		p := u.proc
		u.mu.Unlock()
		if p != nil {
			sig := syscall.SIGTERM
			if time.Now().After(deadline) {
				sig = syscall.SIGKILL
			}
			p.signal(sig)
		}
		select {
		case <-u.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
