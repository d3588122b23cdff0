package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/results"
)

// readyProbe is one way of telling that an instance is ready, tried every `every` until it
// returns nil. Every probe runs from inside the instance's node (through the platform) or reads
// what the platform already brings back (the logs), so it means the same on every platform.
type readyProbe struct {
	what  string // for errors: "tcp 127.0.0.1:8080", "GET http://127.0.0.1:8080/health → 200", ...
	every time.Duration
	check func(ctx context.Context) error
}

// readiness is the probe a command asks for: Ready if set, else a TCP connect to ReadyAddr, else
// none.
func (ex *execution) readiness(inst Instance, cmd kind.Command) *readyProbe {
	r := cmd.Ready
	switch {
	case r != nil && r.HTTP != nil:
		return ex.httpProbe(inst, r.HTTP)
	case r != nil && len(r.Exec) > 0:
		return ex.execProbe(inst, r, cmd.Env)
	case r != nil && r.Log != nil:
		return ex.logProbe(inst, r)
	case cmd.ReadyAddr != "":
		return &readyProbe{what: "tcp " + cmd.ReadyAddr, every: 50 * time.Millisecond, check: func(ctx context.Context) error {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			c, err := ex.pf.Dial(dctx, inst.Node, "tcp", cmd.ReadyAddr)
			if err == nil {
				c.Close()
			}
			return err
		}}
	}
	return nil
}

// httpProbe GETs the path through a connection opened inside the node; ready on the status
// asked for (any 2xx when none).
func (ex *execution) httpProbe(inst Instance, h *kind.HTTPProbe) *readyProbe {
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := "http://" + h.Addr + path
	want := "2xx"
	if h.Status != 0 {
		want = fmt.Sprint(h.Status)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return ex.pf.Dial(ctx, inst.Node, network, h.Addr)
		}}}
	return &readyProbe{what: "GET " + url + " → " + want, every: 100 * time.Millisecond, check: func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if h.Status == 0 && resp.StatusCode/100 == 2 || resp.StatusCode == h.Status {
			return nil
		}
		return fmt.Errorf("status %d", resp.StatusCode)
	}}
}

// execProbe runs argv as a short-lived instance on the node (as a Kubernetes exec probe runs in
// the container); each try is its own instance, <name>.ready-N, its logs in logs/probes/, stopped
// after r.TryTimeout (0: 10 s). With ExecInside, the platform may run that in the instance's
// container instead.
func (ex *execution) execProbe(inst Instance, r *kind.Ready, env []string) *readyProbe {
	argv := r.Exec
	var in *platform.Exec
	if len(r.ExecInside) > 0 {
		in = &platform.Exec{Instance: inst.Name, Args: r.ExecInside}
	}
	tryTimeout := r.TryTimeout
	if tryTimeout <= 0 {
		tryTimeout = 10 * time.Second
	}
	var n int
	return &readyProbe{what: "exec " + strings.Join(argv, " "), every: 500 * time.Millisecond, check: func(ctx context.Context) error {
		n++
		name := fmt.Sprintf("%s.ready-%d", inst.Name, n)
		p, err := ex.pf.Start(ctx, platform.InstanceSpec{Name: name, Node: inst.Node, Args: argv, Env: env,
			Dir: instanceDir(ex.dir, inst), LogDir: filepath.Join(ex.dir, results.LogsDir, "probes"), ExecIn: in})
		if err != nil {
			return err
		}
		select {
		case <-p.Done():
		case <-time.After(tryTimeout):
			_ = p.Stop(time.Second)
			return fmt.Errorf("the probe did not exit within %v", tryTimeout)
		case <-ctx.Done():
			_ = p.Stop(time.Second)
			return ctx.Err()
		}
		if st := p.Exit(); st.Code != 0 {
			return fmt.Errorf("the probe exited %d%s", st.Code, st.Signal)
		}
		return nil
	}}
}

// logProbe waits for a line of the instance's stdout or stderr (as the platform keeps them on
// the runner's host) that matches. It reads each file from where it stopped: the instance's logs
// are only appended to.
func (ex *execution) logProbe(inst Instance, r *kind.Ready) *readyProbe {
	var mu sync.Mutex
	offsets := map[string]int64{}
	partial := map[string]string{}
	logDir := filepath.Join(ex.dir, results.LogsDir)
	return &readyProbe{what: fmt.Sprintf("a log line matching %q", r.Log.String()), every: 100 * time.Millisecond, check: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		for _, stream := range []string{"stdout", "stderr"} {
			path := platform.LogPath(logDir, inst.Node, inst.Name, stream)
			f, err := os.Open(path)
			if err != nil {
				continue // not created yet
			}
			_, err = f.Seek(offsets[path], io.SeekStart)
			if err == nil {
				br := bufio.NewReader(f)
				for {
					line, rerr := br.ReadString('\n')
					offsets[path] += int64(len(line))
					if rerr != nil { // a line not finished yet: keep it for the next try
						partial[path] += line
						break
					}
					full := partial[path] + strings.TrimRight(line, "\r\n")
					partial[path] = ""
					if r.Log.MatchString(full) {
						f.Close()
						return nil
					}
				}
			}
			f.Close()
		}
		return errors.New("no matching line yet")
	}}
}

// stopWithGrace stops, at the end of the run, the components that asked for a grace of their
// own (kind.Command.StopGrace), all at once; the platform's Down stops the rest.
func (ex *execution) stopWithGrace() {
	var wg sync.WaitGroup
	for name, grace := range ex.graces {
		p := ex.procs[name]
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Stop(grace) }()
	}
	wg.Wait()
}
