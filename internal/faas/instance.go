package faas

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/faas/watchdog"
	"github.com/continuum-project/continuum/internal/freeport"
)

// Instance is how one watchdog instance of a python3-http handler runs.
type Instance struct {
	Mode    string // classic or http
	Handler string // function folder (absolute)
	Server  string // http mode's upstream server (continuum or flask)
	// UpstreamPort is the http upstream's loopback port (0: a free one).
	UpstreamPort int
	// Zygote, if set, is the socket of a zygote to fork the http upstream, or each classic
	// request's process, from.
	Zygote string
	// ExecTimeout bounds a request (0: the watchdog's default); Continuum's upstream server
	// enforces it too, so a timed-out handler stops instead of running on.
	ExecTimeout time.Duration
}

// WatchdogFor is the watchdog config of an instance (Listen and MaxInflight are the caller's).
func WatchdogFor(py Python, in Instance) (watchdog.Config, error) {
	cfg := watchdog.Config{Mode: in.Mode, Env: py.Env(), CGI: true, ExecTimeout: in.ExecTimeout}
	switch in.Mode {
	case ModeClassic:
		cfg.Process, cfg.Zygote = py.ClassicArgs(in.Handler), in.Zygote
	case ModeHTTP:
		port := in.UpstreamPort
		if port == 0 {
			p, err := freeport.Port()
			if err != nil {
				return cfg, err
			}
			port = p
		}
		args, err := py.ServerArgs(in.Server, in.Handler, "127.0.0.1", port, in.ExecTimeout)
		if err != nil {
			return cfg, err
		}
		cfg.Process, cfg.UpstreamAddr = args, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cfg.Zygote = in.Zygote
	default:
		return cfg, fmt.Errorf("watchdog mode %q: want %s or %s (%s runs without one)", in.Mode, ModeClassic, ModeHTTP, ModeMicro)
	}
	return cfg, nil
}
