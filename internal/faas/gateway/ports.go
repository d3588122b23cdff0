package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/promtext"
)

// instancePorts hands out the ports a provider's instances listen on: the lowest free one from a
// base, given back when the instance ends.
type instancePorts struct {
	mu   sync.Mutex
	byID map[string]int
}

// take gives instance id the lowest port from base (0: DefaultBasePort) that no other holds.
func (ps *instancePorts) take(id string, base int) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.byID == nil {
		ps.byID = map[string]int{}
	}
	if base == 0 {
		base = DefaultBasePort
	}
	used := map[int]bool{}
	for _, port := range ps.byID {
		used[port] = true
	}
	port := base
	for used[port] {
		port++
	}
	ps.byID[id] = port
	return port
}

// release gives id's port back.
func (ps *instancePorts) release(id string) {
	ps.mu.Lock()
	delete(ps.byID, id)
	ps.mu.Unlock()
}

// held is how many ports are taken.
func (ps *instancePorts) held() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.byID)
}

// waitHealthy polls url's /_/health until it answers 200 or ctx ends.
func waitHealthy(ctx context.Context, url string) error {
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_/health", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w", url, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// watchdogCPU is the CPU time of an instance's function processes as its watchdog counts them
// (watchdog_function_cpu_seconds_total on /_/metrics), what LocalProvider reads in process: an
// instance that runs apart from the gateway's node is counted by no platform client the
// gateway may ask (a pod's figures come from its kubelet, through a grant too wide to give).
func watchdogCPU(ctx context.Context, inst Instance) (float64, error) {
	m, err := promtext.Scrape(ctx, inst.URL+"/_/metrics")
	if err != nil {
		return 0, fmt.Errorf("instance %s: its CPU time: %w", inst.ID, err)
	}
	cpu, ok := m[watchdogCPUMetric]
	if !ok {
		return 0, fmt.Errorf("instance %s: its watchdog's metrics have no %s", inst.ID, watchdogCPUMetric)
	}
	return cpu, nil
}

// watchdogCPUMetric is the watchdog's counter of its function processes' CPU seconds.
const watchdogCPUMetric = "watchdog_function_cpu_seconds_total"
