package faas

import (
	"fmt"
	"net"
	"strconv"

	"github.com/continuum-project/continuum/internal/faas/watchdog"
)

// WatchdogFor is the watchdog config of a python3-http handler in mode classic or http (server
// is http's upstream server; upstreamPort 0 picks a free one; zygote, if set, is the socket of
// a zygote to fork http's upstream, or each classic request's process, from).
func WatchdogFor(py Python, mode, handler, server string, upstreamPort int, zygote string) (watchdog.Config, error) {
	cfg := watchdog.Config{Mode: mode, Env: py.Env(), CGI: true}
	switch mode {
	case ModeClassic:
		cfg.Process, cfg.Zygote = py.ClassicArgs(handler), zygote
	case ModeHTTP:
		if upstreamPort == 0 {
			p, err := freePort()
			if err != nil {
				return cfg, err
			}
			upstreamPort = p
		}
		args, err := py.ServerArgs(server, handler, "127.0.0.1", upstreamPort)
		if err != nil {
			return cfg, err
		}
		cfg.Process, cfg.UpstreamAddr = args, net.JoinHostPort("127.0.0.1", strconv.Itoa(upstreamPort))
		cfg.Zygote = zygote
	default:
		return cfg, fmt.Errorf("watchdog mode %q: want %s or %s (%s runs without one)", mode, ModeClassic, ModeHTTP, ModeMicro)
	}
	return cfg, nil
}

// freePort is a loopback port free now (the upstream binds it moments later).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
