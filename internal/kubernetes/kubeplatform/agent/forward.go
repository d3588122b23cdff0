package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ParseForward reads a forward, PORT=HOST:PORT: connections to PORT on every address of the
// pod go to HOST:PORT.
func ParseForward(s string) (listen, target string, err error) {
	p, t, ok := strings.Cut(s, "=")
	port, perr := strconv.Atoi(p)
	if !ok || perr != nil || port < 1 || port > 65535 {
		return "", "", fmt.Errorf("forward %q: want PORT=HOST:PORT, e.g. 8080=10.244.0.7:8080", s)
	}
	if _, tp, err := net.SplitHostPort(t); err != nil || tp == "" {
		return "", "", fmt.Errorf("forward %q: the target is HOST:PORT, e.g. 10.244.0.7:8080", s)
	}
	return ":" + p, t, nil
}

// Forward relays TCP connections, for each of forwards (PORT=HOST:PORT, see ParseForward), from
// PORT on every address of this pod to HOST:PORT, until ctx ends. The Kubernetes platform runs
// it in a node pod for each container pod of the node, so that the node's address and its
// loopback reach the container's declared ports as they do on the testbed, where the container
// shares the node's network. A connection whose target refuses is closed at once: the client
// sees what it would see from a server that is not up yet.
func Forward(ctx context.Context, forwards []string) error {
	if len(forwards) == 0 {
		return errors.New("no forwards")
	}
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	var lc net.ListenConfig
	targets := make([]string, 0, len(forwards))
	for _, f := range forwards {
		listen, target, err := ParseForward(f)
		if err != nil {
			closeAll()
			return err
		}
		ln, err := lc.Listen(ctx, "tcp", listen)
		if err != nil {
			closeAll()
			return fmt.Errorf("forward %s: %w", f, err)
		}
		lns, targets = append(lns, ln), append(targets, target)
	}
	var wg sync.WaitGroup // every accept loop and relay: Forward returns after them
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); closeAll() }()
	for i, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Add(1)
				go func() { defer wg.Done(); relay(ctx, c, targets[i]) }()
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// relay copies between near and a new connection to target until both directions end (or ctx
// does), passing half-closes on.
func relay(ctx context.Context, near net.Conn, target string) {
	defer near.Close()
	d := net.Dialer{Timeout: 10 * time.Second}
	far, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	defer far.Close()
	stop := context.AfterFunc(ctx, func() { near.Close(); far.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(far, near)
	go pipe(near, far)
	wg.Wait()
}
