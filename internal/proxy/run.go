package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/config"
	"github.com/continuum-project/continuum/internal/proxy/dataplane"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
	"github.com/continuum-project/continuum/internal/proxy/pool"
	"github.com/continuum-project/continuum/internal/proxy/sources"
)

// Proxy is one node's proxy: discovery, the services' pools and the two HTTP servers.
type Proxy struct {
	cfg config.Config
	log *slog.Logger
	m   *metrics.Metrics
	// adminToken is AdminTokenFile's token ("" = the admin endpoints are open).
	adminToken string
	rt         *pool.Router
	u          *sources.Union
	h          *dataplane.Handler
	// loop is the data plane's server while Serve runs.
	loop atomic.Pointer[dataplane.Server]

	// ctx ends the background work (sources, maintainers, probes), which wg tracks.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// New validates cfg and builds a proxy; nothing runs until Serve.
func New(cfg config.Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Sources) == 0 {
		return nil, errors.New("discovery: at least one source is required")
	}
	if cfg.Node == "" {
		cfg.Node, _ = os.Hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = config.DefaultConfig().ShutdownTimeout
	}
	if cfg.ReadHeaderTimeout == 0 {
		cfg.ReadHeaderTimeout = config.DefaultConfig().ReadHeaderTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = config.DefaultConfig().WriteTimeout
	}
	tok, err := readAdminToken(cfg.AdminTokenFile)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, m: metrics.New(cfg.Node), adminToken: tok}
	if p.rt, err = pool.NewRouter(cfg, time.Now, p.log, p.m); err != nil {
		return nil, err
	}
	p.u = sources.New(cfg.Sources, p.log, p.m, p.rt.Apply, p.rt.SetReady)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.h = dataplane.NewHandler(p.ctx, &p.wg, p.rt, p.m, p.log, cfg.MaxInflight)
	p.h.WriteTimeout = cfg.WriteTimeout
	return p, nil
}

// Handler is the data plane as an http.Handler: what Serve's own HTTP/1.1 loop (package dataplane)
// hands over to net/http's server (upgrades, requests outside the loop's parser), and a way to
// mount the proxy in another server.
func (p *Proxy) Handler() http.Handler { return p.h }

// AdminHandler serves /metrics, /healthz, /readyz and /debug/pools.
func (p *Proxy) AdminHandler() http.Handler { return p.adminHandler() }

// Serve runs discovery and serves clients on ln and the admin endpoints on admin (nil: none)
// until ctx ends; then it stops accepting, drains requests in flight for up to
// ShutdownTimeout, stops the background work and returns once every goroutine it started
// has. Call it once.
func (p *Proxy) Serve(ctx context.Context, ln, admin net.Listener) error {
	defer p.close()
	p.u.Run(p.ctx, &p.wg)
	errLog := log.New(dataplane.SlogWriter{Log: p.log}, "", 0)
	// The data plane: the proxy's own HTTP/1.1 loop (package dataplane), and net/http's server for the
	// connections the loop hands over (upgrades, requests outside its parser).
	fallback := &http.Server{Handler: boundUnreadBody{p.h}, ReadHeaderTimeout: p.cfg.ReadHeaderTimeout, IdleTimeout: dataplane.IdleTimeout, ErrorLog: errLog}
	// One request per handed-over connection: the next head on it is the loop's to read (and
	// check, framing.go) once more, since a client reconnects.
	fallback.SetKeepAlivesEnabled(false)
	loop := dataplane.NewServer(p.h, p.cfg.ReadHeaderTimeout, p.cfg.WriteTimeout, fallback, ln.Addr())
	p.loop.Store(loop)
	type serveFunc struct {
		addr  net.Addr
		serve func() error
	}
	serves := []serveFunc{{ln.Addr(), func() error { return loop.Serve(ln) }}, {ln.Addr(), func() error { return fallback.Serve(loop.Handoff) }}}
	servers := []*http.Server{fallback}
	if admin != nil {
		// The admin server has the data plane's header timeout: a client that never finishes
		// its headers holds a connection no longer there than here.
		adm := &http.Server{Handler: p.adminHandler(), ReadHeaderTimeout: p.cfg.ReadHeaderTimeout,
			IdleTimeout: 2 * time.Minute, ErrorLog: errLog}
		servers = append(servers, adm)
		serves = append(serves, serveFunc{admin.Addr(), func() error { return adm.Serve(admin) }})
		p.log.Info("proxy admin listening", "addr", admin.Addr().String())
	}
	errc := make(chan error, len(serves))
	var serving sync.WaitGroup
	for _, sv := range serves {
		serving.Add(1)
		go func() {
			defer serving.Done()
			if err := sv.serve(); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serve %s: %w", sv.addr, err)
			}
		}()
	}
	p.log.Info("proxy listening", "addr", ln.Addr().String(), "node", p.cfg.Node, "sources", len(p.cfg.Sources))
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
	defer cancel()
	// The loop first: once it stops accepting, nothing more is handed over.
	loop.Shutting.Store(true)
	ln.Close()
	if serr := loop.Shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("shutdown: %w", serr)
	}
	for _, srv := range servers {
		if serr := srv.Shutdown(sctx); serr != nil {
			// Requests still running (long streams) are cut so that none outlives Serve.
			srv.Close()
			if err == nil {
				err = fmt.Errorf("shutdown: %w", serr)
			}
		}
	}
	// Upgraded (WebSocket) connections: net/http forgot them when they were hijacked. They
	// get what is left of the grace, then are cut, so that none outlives Serve.
	if p.h.Upgraded.Shutdown(sctx) && err == nil {
		err = fmt.Errorf("shutdown: upgraded connections cut: %w", context.DeadlineExceeded)
	}
	serving.Wait()
	p.log.Info("proxy stopped", "connections_handed_to_net_http", loop.HandedOver.Load())
	return err
}

// unreadBodyDrain bounds what net/http's server does with a request body the proxy did not
// read (it answered without forwarding, an unknown service say): net/http reads up to
// 256 KiB of it after the answer, so that the client sees the answer before the close rather
// than a reset; past this it closes.
const unreadBodyDrain = time.Second

// boundUnreadBody is the fallback server's handler: after the proxy's answer, the client
// connection's read deadline bounds net/http's drain of a body nobody read (without it, a
// client that declares a body and sends none held the connection for ever: the fallback
// server has no ReadTimeout, and the loop's deadlines were cleared at the hand-over). A body
// that was read whole is not waited for at all.
type boundUnreadBody struct{ h http.Handler }

func (b boundUnreadBody) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		defer func() {
			// ErrHijacked after an upgrade: the splice has its own life.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyDrain))
		}()
	}
	b.h.ServeHTTP(w, r)
}

// close stops the background work and waits for it; Serve calls it on the way out.
func (p *Proxy) close() {
	p.once.Do(func() {
		p.cancel()
		p.wg.Wait()
		for _, s := range p.rt.All() {
			s.Close()
		}
	})
}

// Run listens on cfg.Listen (and cfg.AdminListen unless "-") and serves until ctx ends.
func Run(ctx context.Context, cfg config.Config) error {
	p, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		p.close()
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	var admin net.Listener
	if cfg.AdminListen != "-" {
		if admin, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			ln.Close()
			p.close()
			return fmt.Errorf("admin listen %s: %w", cfg.AdminListen, err)
		}
	}
	return p.Serve(ctx, ln, admin)
}
