package orchestrator

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/backoff"
	"github.com/continuum-project/continuum/internal/fl/control"
)

// Where a node's services listen: its Flower server on its port, its aggregator's control API
// 1000 above (Config.BasePort), at the host its aggregator was started at.

// controlAddr is where node id's aggregator serves its control API.
func (j *run) controlAddr(id string) string {
	return net.JoinHostPort(j.aggregatorHost(id), strconv.Itoa(j.ports[id]+1000))
}

func (j *run) flowerAddr(id string) string {
	return net.JoinHostPort(j.aggregatorHost(id), strconv.Itoa(j.ports[id]))
}

// aggregatorHost is the host node id's aggregator was last started at (its node's before).
func (j *run) aggregatorHost(id string) string {
	h, _ := j.aggregatorHostOK(id)
	return h
}

// aggregatorHostOK is aggregatorHost, and whether an aggregator of id was started before.
func (j *run) aggregatorHostOK(id string) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if h, ok := j.hosts[id]; ok {
		return h, true
	}
	return j.members[id].Host, false
}

// aggregator is the control API client of node id's aggregator, with its control token.
func (j *run) aggregator(id string) control.Client {
	return control.Client{ID: id, Addr: j.controlAddr(id), Token: j.o.ControlToken(id)}
}

// configure sends node id's aggregator new settings, again after a failed call (a busy
// aggregator's answer may take longer than a call's timeout; a pod's network may be settling)
// for up to configureTries calls.
func (j *run) configure(ctx context.Context, id string, s control.Settings) error {
	retry := backoff.Backoff{Min: 500 * time.Millisecond, Max: 4 * time.Second, Jitter: 0.5}
	var err error
	for try := 1; ; try++ {
		if err = j.aggregator(id).Configure(ctx, s); err == nil || try == configureTries {
			return err
		}
		j.logf("configure %s (try %d of %d): %v", id, try, configureTries, err)
		if !retry.Wait(ctx) {
			return err
		}
	}
}

// configureTries bounds configure's calls: with their timeouts and waits, about half a minute.
const configureTries = 4

// readyTimeout bounds a new aggregator's start (Python with PyTorch on a busy 2-core machine).
const readyTimeout = 120 * time.Second

// waitReady waits until node id's aggregator answers its control API's /status (served only once
// its Flower server listens); an aggregator that exits first fails it at once.
func (j *run) waitReady(ctx context.Context, id string) error {
	deadline := time.Now().Add(readyTimeout)
	agg := j.aggregator(id)
	name := serviceName(roleIn(j.status().Config, id), id)
	for {
		if _, err := agg.Status(ctx); err == nil {
			return nil
		}
		obs, oerr := j.o.cfg.Runner.Observe(ctx)
		if oerr == nil {
			for n, how := range obs.Exited {
				if n == serviceName("global", id) || n == serviceName("local", id) || n == name {
					return fmt.Errorf("aggregator %s exited (%s) before it was ready: see its stderr log", id, how)
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aggregator %s not ready at %s after %v", id, agg.URL(control.StatusPath), readyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
