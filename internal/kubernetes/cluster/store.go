package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/kubernetes/clusterstore"
)

// startStore starts the control plane's store: one member of the store registered under
// Config.Store (package clusterstore: continuum kv, etcd), serving clients on loopback (the API
// server is its only client): on a free port of the host for the one-node cluster, in the
// control plane's node for a multi-node cluster (whose loopback is its own: the usual ports).
func (c *Cluster) startStore(ctx context.Context) error {
	st, err := clusterstore.Lookup(c.cfg.Store)
	if err != nil {
		return err
	}
	ports := []int{2379, 2381, 2380}
	if c.tb == nil {
		if ports, err = freeport.Ports(3); err != nil {
			return err
		}
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	metrics := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	argv, err := st.Command(c.cfg.storeArgs(c.p.store(), client, metrics, "http://127.0.0.1:"+strconv.Itoa(ports[2])))
	if err != nil {
		return err
	}
	var pr *proc
	if c.tb == nil {
		pr, err = startProc(c.p, "store", argv, nil)
	} else {
		pr, err = startNodeProc(c.tb, c.p, c.cpNode, "store", argv, nil, false)
	}
	if err != nil {
		return err
	}
	c.store = pr
	c.storeURL, c.storeMetrics = client, metrics
	return c.waitStore(ctx, pr)
}

// waitStore waits until the store answers its health check, or its process pr exits.
func (c *Cluster) waitStore(ctx context.Context, pr *proc) error {
	return waitFor(ctx, c.cfg.Store+" /health", 60*time.Second, []*proc{pr}, func() error {
		return httpOK(ctx, c.dialer(c.cpNode), c.storeMetrics+"/health")
	})
}

// storeArgs are the store member's arguments.
func (c Config) storeArgs(dataDir, client, metrics, peer string) clusterstore.Args {
	return clusterstore.Args{ContinuumBin: c.ContinuumBin, BinDir: c.BinDir, DataDir: dataDir,
		ClientURL: client, MetricsURL: metrics, PeerURL: peer}
}

// httpOK GETs url, connecting with dial, and wants a 200.
func httpOK(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
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
