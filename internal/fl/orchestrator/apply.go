package orchestrator

import (
	"context"
	"os"
	"sort"
	"sync"

	"github.com/continuum-project/continuum/internal/fl/control"
	"github.com/continuum-project/continuum/internal/fl/plan"
)

// actions is what apply did, by service name: a Reconfiguration's Restarted, Configured, Stopped.
type actions struct{ restarted, configured, stopped []string }

// apply moves the running services from old (nil: nothing runs) to conf, touching only what
// differs: services of nodes no longer in conf stop; a new or moved global aggregator starts
// (from the latest snapshot when resume); a local aggregator starts when new or when its parent
// moved (to another node, or to another address: a pod's), and is reconfigured over its control
// API when only its client count, epochs or local rounds changed; a client starts when new or
// when its parent changed or restarted.
func (j *run) apply(ctx context.Context, old *plan.Config, conf plan.Config, resume bool) (actions, error) {
	var acts actions
	oldParent, newParent := map[string]string{}, parents(conf)
	if old != nil {
		oldParent = parents(*old)
	}
	// Stop what is no longer part of the configuration, and what moves.
	j.mu.Lock()
	running := map[string]Service{}
	for k, v := range j.running {
		running[k] = v
	}
	j.mu.Unlock()
	for name, svc := range running {
		if roleOf(name) == "clients" {
			continue // client groups are diffed below
		}
		np, stays := newParent[svc.Node]
		isGlobal := svc.Node == conf.Global && roleOf(name) == "global"
		if isGlobal || (stays && np == oldParent[svc.Node] && roleOf(name) == roleIn(conf, svc.Node)) {
			continue
		}
		if err := j.stopService(ctx, name); err != nil {
			j.logf("stop %s: %v", name, err)
		}
		acts.stopped = append(acts.stopped, name)
	}
	// The global aggregator.
	restartedAgg := map[string]bool{}
	gname := serviceName("global", conf.Global)
	gMoved := false // the global aggregator came back at another address (a pod's)
	if !j.isRunning(gname) {
		before, had := j.aggregatorHostOK(conf.Global)
		if err := j.startService(ctx, j.globalService(conf, resume)); err != nil {
			return acts, err
		}
		gMoved = had && j.aggregatorHost(conf.Global) != before
		restartedAgg[conf.Global] = true
		acts.restarted = append(acts.restarted, gname)
	} else if old != nil && (childCount(*old, old.Global) != childCount(conf, conf.Global) || len(conf.Clusters) == 0 && old.Epochs != conf.Epochs) {
		// (Under local aggregators the global one's epochs are not used: they pass their own.)
		if err := j.configure(ctx, conf.Global, control.Settings{MinClients: childCount(conf, conf.Global), Epochs: conf.Epochs}); err != nil {
			return acts, err
		}
		acts.configured = append(acts.configured, gname)
	}
	if err := j.waitReady(ctx, conf.Global); err != nil {
		return acts, err
	}
	// Local aggregators.
	for _, c := range conf.Clusters {
		name := serviceName("local", c.Aggregator)
		if !j.isRunning(name) || restartedAgg[conf.Global] && (oldParent[c.Aggregator] != conf.Global || gMoved) {
			if err := j.startService(ctx, j.localService(conf, c)); err != nil {
				return acts, err
			}
			restartedAgg[c.Aggregator] = true
			acts.restarted = append(acts.restarted, name)
			continue
		}
		if old != nil {
			oc, _ := clusterOf(*old, c.Aggregator)
			if len(oc.Clients) != len(c.Clients) || old.Epochs != conf.Epochs || old.LocalRounds != conf.LocalRounds {
				if err := j.configure(ctx, c.Aggregator, control.Settings{MinClients: len(c.Clients), Epochs: conf.Epochs, LocalRounds: conf.LocalRounds}); err != nil {
					return acts, err
				}
				acts.configured = append(acts.configured, name)
			}
		}
	}
	for _, c := range conf.Clusters {
		if restartedAgg[c.Aggregator] {
			if err := j.waitReady(ctx, c.Aggregator); err != nil {
				return acts, err
			}
		}
	}
	// Clients.
	if j.o.cfg.GroupClients {
		return acts, j.applyGroups(ctx, conf, &acts)
	}
	for _, id := range clientsOf(conf) {
		name := serviceName("client", id)
		parent := newParent[id]
		if j.isRunning(name) && !restartedAgg[parent] && oldParent[id] == parent {
			continue
		}
		if j.isRunning(name) {
			_ = j.stopService(ctx, name)
		}
		if err := j.startService(ctx, j.clientService(id, parent)); err != nil {
			return acts, err
		}
		acts.restarted = append(acts.restarted, name)
	}
	sort.Strings(acts.restarted)
	sort.Strings(acts.configured)
	sort.Strings(acts.stopped)
	return acts, nil
}

// applyGroups runs the clients of each host as one process (`continuum_fl clients`): a group
// whose clients or their parents changed starts again with its new plan; an emptied group stops.
func (j *run) applyGroups(ctx context.Context, conf plan.Config, acts *actions) error {
	want := map[string]Service{}
	parent := parents(conf)
	byHost := map[string][]string{}
	for _, id := range clientsOf(conf) {
		h := j.members[id].Host
		byHost[h] = append(byHost[h], id)
	}
	for h, ids := range byHost {
		svc, err := j.groupService(h, ids, parent)
		if err != nil {
			return err
		}
		want[svc.Name] = svc
	}
	j.mu.Lock()
	var have []Service
	for name, svc := range j.running {
		if roleOf(name) == "clients" {
			have = append(have, svc)
		}
	}
	j.mu.Unlock()
	for _, svc := range have {
		w, ok := want[svc.Name]
		if ok && w.Signature == svc.Signature && !j.restartedParentOf(svc.Clients, parent, acts) {
			delete(want, svc.Name)
			continue
		}
		_ = j.stopService(ctx, svc.Name)
		if !ok {
			acts.stopped = append(acts.stopped, svc.Name)
		}
	}
	for _, name := range sortedKeys(want) {
		if err := j.startService(ctx, want[name]); err != nil {
			return err
		}
		acts.restarted = append(acts.restarted, name)
	}
	sort.Strings(acts.restarted)
	sort.Strings(acts.stopped)
	return nil
}

// restartedParentOf: whether an aggregator of one of the clients was (re)started just now.
func (j *run) restartedParentOf(clients []string, parent map[string]string, acts *actions) bool {
	for _, c := range clients {
		for _, r := range acts.restarted {
			if r == serviceName("local", parent[c]) || r == serviceName("global", parent[c]) {
				return true
			}
		}
	}
	return false
}

func (j *run) isRunning(name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.running[name]
	return ok
}

func (j *run) startService(ctx context.Context, s Service) error {
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return err
	}
	host, err := j.o.cfg.Runner.Start(ctx, s)
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.running[s.Name] = s
	if r := roleOf(s.Name); r == "global" || r == "local" {
		j.hosts[s.Node] = host
	}
	j.mu.Unlock()
	return nil
}

func (j *run) stopService(ctx context.Context, name string) error {
	j.mu.Lock()
	delete(j.running, name)
	j.mu.Unlock()
	return j.o.cfg.Runner.Stop(ctx, name)
}

func (j *run) stopAll() {
	j.mu.Lock()
	names := make([]string, 0, len(j.running))
	for n := range j.running {
		names = append(names, n)
	}
	j.stopped = true
	j.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); _ = j.stopService(context.Background(), n) }()
	}
	wg.Wait()
}
