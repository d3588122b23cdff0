package kubernetes

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// staleAfter is how many poll intervals node usage survives failed polls. Keeping the last
// numbers across a blip avoids flapping; dropping them afterwards keeps a broken
// metrics-server from leaving a node marked overloaded for good (unknown is not overloaded).
const staleAfter = 3

type nodeUsage struct {
	cpuMilli    int64
	memoryBytes int64
}

// nodeMetrics is the last NodeMetrics list, shared by the poller (writer) and the snapshot
// builder (reader).
type nodeMetrics struct {
	mu    sync.Mutex
	usage map[string]nodeUsage
}

func newNodeMetrics() *nodeMetrics { return &nodeMetrics{} }

// set replaces the usage and reports whether it changed.
func (m *nodeMetrics) set(u map[string]nodeUsage) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if maps.Equal(m.usage, u) {
		return false
	}
	m.usage = u
	return true
}

func (m *nodeMetrics) get() map[string]nodeUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// pollMetrics lists metrics.k8s.io NodeMetrics now and every MetricsInterval until ctx is done,
// and calls changed when the usage differs from the last poll's.
//
// A cluster without metrics-server answers 404 (no such API group); then loads are unknown
// (zero), which is logged once, and polling goes on because metrics-server may be installed
// later. Other failures (forbidden, 503 while metrics-server restarts, timeouts) keep the last
// numbers for staleAfter intervals.
func (s *Source) pollMetrics(ctx context.Context, m *nodeMetrics, changed func()) {
	interval := s.cfg.MetricsInterval.Duration
	t := time.NewTicker(interval)
	defer t.Stop()
	var (
		lastOK      = time.Now()
		absentShown bool
		failing     bool
	)
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		list, err := s.metrics.MetricsV1beta1().NodeMetricses().List(pctx, metav1.ListOptions{})
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			if failing || absentShown {
				s.log.Info("node metrics available")
			}
			failing, absentShown, lastOK = false, false, time.Now()
			u := make(map[string]nodeUsage, len(list.Items))
			for _, nm := range list.Items {
				cpu := nm.Usage[corev1.ResourceCPU]
				mem := nm.Usage[corev1.ResourceMemory]
				u[nm.Name] = nodeUsage{cpuMilli: cpu.MilliValue(), memoryBytes: mem.Value()}
			}
			if m.set(u) {
				changed()
			}
		case apierrors.IsNotFound(err):
			if !absentShown {
				s.log.Info("metrics.k8s.io not served (no metrics-server); node loads unknown", "err", err)
				absentShown = true
			}
			if m.set(nil) {
				changed()
			}
		default:
			if !failing {
				s.log.Warn("node metrics poll failed; keeping the last loads for a while", "err", err)
				failing = true
			}
			if time.Since(lastOK) > staleAfter*interval && m.set(nil) {
				changed()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
