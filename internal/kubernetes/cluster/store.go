package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startStore starts the control plane's store: one continuum kv member, or etcd, serving
// clients on a free loopback port (the API server is its only client).
func (c *Cluster) startStore(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	metrics := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[2])
	var argv []string
	switch c.cfg.Store {
	case "kv":
		argv = []string{c.cfg.ContinuumBin, "kv", "--name", "cluster", "--data-dir", c.p.store(),
			"--listen-client-urls", client, "--listen-metrics-urls", metrics}
	case "etcd":
		argv = []string{filepath.Join(c.cfg.BinDir, "etcd"), "--name", "cluster", "--data-dir", c.p.store(),
			"--listen-client-urls", client, "--advertise-client-urls", client, "--listen-metrics-urls", metrics,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "cluster=" + peer}
	}
	pr, err := startProc(c.p, "store", argv, nil)
	if err != nil {
		return err
	}
	c.store = pr
	c.storeURL = client
	return waitFor(c.cfg.Store+" /health", 60*time.Second, []*proc{pr}, func() error {
		return httpOK(ctx, metrics+"/health")
	})
}

// httpOK GETs url and wants a 200.
func httpOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// freePorts asks the kernel for n free loopback TCP ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// containsLine reports whether text has a line equal to s.
func containsLine(text, s string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}
