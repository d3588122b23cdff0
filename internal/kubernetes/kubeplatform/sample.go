package kubeplatform

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/agent"
	"github.com/continuum-project/continuum/internal/platform"
)

// sampler turns the agents' readings into samples.csv rows: cumulative figures counted from the
// sampler's first reading, utilisation over the last interval. Power and energy stay 0: a
// cluster's nodes have no model here.
type sampler struct {
	pf    *Platform
	first map[string]reading // by node, or node + "/" + instance
	last  map[string]reading
	lastT map[string]time.Duration
	// Container pods: the CPU seconds of an instance's earlier pods, and its last reading.
	podBase map[string]float64
	podLast map[string]podReading
}

type reading struct {
	cpu              float64
	rx, tx, rxp, txp uint64
}

func newSampler(pf *Platform) *sampler {
	return &sampler{pf: pf, first: map[string]reading{}, last: map[string]reading{}, lastT: map[string]time.Duration{},
		podBase: map[string]float64{}, podLast: map[string]podReading{}}
}

// take reads every node's agent at once and returns the rows, nodes in name order, each
// followed by its instances.
func (s *sampler) take(ctx context.Context, t time.Duration) []platform.Sample {
	s.pf.mu.Lock()
	nodes := make([]*nodePod, 0, len(s.pf.nodes))
	for _, np := range s.pf.nodes {
		nodes = append(nodes, np)
	}
	helpers := maps.Clone(s.pf.helpers)
	s.pf.mu.Unlock()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].name < nodes[j].name })
	got := make([]*agent.Sample, len(nodes))
	var wg sync.WaitGroup
	for i, np := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if a, err := np.agent.Sample(sctx); err == nil {
				got[i] = &a
			}
		}()
	}
	wg.Wait()
	var rows []platform.Sample
	for i, np := range nodes {
		a := got[i]
		if a == nil {
			continue // unreachable this round (a paused or lost node): no row rather than a wrong one
		}
		var disk int64
		for _, in := range a.Instances {
			disk += in.Disk
		}
		cum, util := s.account(np.name, t, reading{cpu: a.CPUSeconds, rx: a.RxBytes, tx: a.TxBytes, rxp: a.RxPackets, txp: a.TxPackets})
		rows = append(rows, platform.Sample{T: t, Node: np.name, CPUSeconds: cum.cpu, CPUUtil: util, RSS: a.RSS, Disk: disk,
			RxBytes: cum.rx, TxBytes: cum.tx, RxPackets: cum.rxp, TxPackets: cum.txp})
		sort.Slice(a.Instances, func(i, j int) bool { return a.Instances[i].Name < a.Instances[j].Name })
		for _, in := range a.Instances {
			if helpers[in.Name] {
				continue // the platform's own (a container pod's forward): part of the node's figures only
			}
			cum, util := s.account(np.name+"/"+in.Name, t, reading{cpu: in.CPUSeconds})
			rows = append(rows, platform.Sample{T: t, Node: np.name, Component: in.Name, CPUSeconds: cum.cpu, CPUUtil: util,
				RSS: in.RSS, Disk: in.Disk})
		}
	}
	return append(rows, s.podRows(ctx, t)...)
}

// account records a reading of key and returns it counted from the first one, and the cores used
// since the last one.
func (s *sampler) account(key string, t time.Duration, r reading) (cum reading, util float64) {
	first, ok := s.first[key]
	if !ok {
		s.first[key], first = r, r
	}
	if last, ok := s.last[key]; ok && t > s.lastT[key] {
		util = max(0, (r.cpu-last.cpu)/(t-s.lastT[key]).Seconds())
	}
	s.last[key], s.lastT[key] = r, t
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return reading{cpu: max(0, r.cpu-first.cpu), rx: sub(r.rx, first.rx), tx: sub(r.tx, first.tx),
		rxp: sub(r.rxp, first.rxp), txp: sub(r.txp, first.txp)}, util
}
