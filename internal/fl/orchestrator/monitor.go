package orchestrator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// monitor observes the nodes once: a service that exited takes its node out (the global
// aggregator is started again from the latest snapshot instead); an isolated host takes its
// nodes out until healed; a changed set of available nodes is reconfigured.
func (j *run) monitor(ctx context.Context) (finished bool, err error) {
	obs, err := j.o.cfg.Runner.Observe(ctx)
	if err != nil {
		j.logf("observe: %v", err)
		return false, nil
	}
	now := time.Now()
	conf := j.status().Config
	// Every exit of this observation is taken first (out of running, forgotten by the runner,
	// its nodes out), and only then is anything started: a service started meanwhile is not
	// one of the observation's.
	var global string // the global aggregator's service, if it exited but for its rounds' end
	for _, name := range sortedKeys(obs.Exited) {
		how := obs.Exited[name]
		j.mu.Lock()
		svc, ok := j.running[name]
		if ok {
			delete(j.running, name)
		}
		j.mu.Unlock()
		if !ok {
			continue
		}
		j.o.rec.event(now, Event{Kind: EventServiceExited, Service: name, Node: svc.Node, How: how})
		j.logf("service %s exited (%s)", name, how)
		// Dealt with: the runner forgets it (without waiting on the platform: a pod that
		// someone else deletes may take its grace to go).
		j.o.cfg.Runner.Forget(name)
		if roleOf(name) == "global" {
			if how == "exit 0" {
				return true, nil // its rounds are done
			}
			global = name
			continue
		}
		j.mu.Lock()
		for _, id := range append([]string{svc.Node}, svc.Clients...) {
			if id != "" {
				j.left[id] = "its service exited (" + how + ")"
			}
		}
		j.mu.Unlock()
	}
	moved := false
	if global != "" {
		// The global aggregator is indispensable: started again, it continues from the model
		// repository's latest snapshot.
		j.logf("global aggregator %s exited: starting it again from the latest snapshot", global)
		before := j.aggregatorHost(conf.Global)
		if err := j.startService(ctx, j.globalService(conf, true)); err != nil {
			return false, err
		}
		j.o.rec.event(time.Now(), Event{Kind: EventServiceRestarted, Service: global, Resume: true, RestartS: time.Since(now).Seconds()})
		if moved = j.aggregatorHost(conf.Global) != before; moved {
			// It runs apart (a pod) and came back at a new address: what connects to it stops,
			// and starts again pointed there below (with the configuration in force, or the
			// one a node change makes).
			j.stopChildren(ctx, conf, conf.Global)
		}
	}
	avail := j.availability(obs)
	var cause []string
	j.mu.Lock()
	for id := range j.members {
		if avail[id] != j.avail[id] {
			if avail[id] {
				cause = append(cause, id+" joined")
			} else {
				why := j.left[id]
				if why == "" {
					why = "unreachable"
				}
				cause = append(cause, id+" left ("+why+")")
			}
		}
	}
	j.mu.Unlock()
	if len(cause) == 0 {
		if moved {
			_, err := j.apply(ctx, &conf, conf, true)
			return false, err
		}
		return false, nil
	}
	sort.Strings(cause)
	return false, j.reconfigure(ctx, now, avail, cause)
}

// stopChildren stops the services whose parent is aggregator id in conf: local aggregators,
// clients, and client groups with one of them.
func (j *run) stopChildren(ctx context.Context, conf plan.Config, id string) {
	parent := parents(conf)
	j.mu.Lock()
	var stop []string
	for name, svc := range j.running {
		child := roleOf(name) != "global" && parent[svc.Node] == id
		for _, c := range svc.Clients {
			child = child || parent[c] == id
		}
		if child {
			stop = append(stop, name)
		}
	}
	j.mu.Unlock()
	sort.Strings(stop)
	j.logf("aggregator %s moved to %s: restarting %v", id, j.aggregatorHost(id), stop)
	for _, name := range stop {
		if err := j.stopService(ctx, name); err != nil {
			j.logf("stop %s: %v", name, err)
		}
	}
}

// availability: a member is available unless removed by request, its service exited, or its
// host is isolated.
func (j *run) availability(obs Observation) map[string]bool {
	out := map[string]bool{}
	j.mu.Lock()
	defer j.mu.Unlock()
	for id, m := range j.members {
		_, gone := j.left[id]
		removed := j.o.isRemoved(id)
		if !removed && gone && j.o.wasJoined(id) {
			delete(j.left, id) // an explicit join brings a node whose service exited back
			gone = false
		}
		out[id] = !removed && !gone && !obs.Isolated[m.Host]
		if removed || obs.Isolated[m.Host] {
			if _, ok := j.left[id]; !ok {
				if removed {
					j.left[id] = "removed by request"
				} else {
					j.left[id] = "isolated by a partition"
				}
			}
		} else if j.left[id] == "removed by request" || j.left[id] == "isolated by a partition" {
			delete(j.left, id)
		}
	}
	return out
}

func (j *run) availableNodes() []plan.Node {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []plan.Node
	for _, id := range sortedKeys(j.members) {
		if j.avail[id] {
			out = append(out, j.members[id].Node)
		}
	}
	return out
}

func (j *run) reconfigure(ctx context.Context, detected time.Time, avail map[string]bool, cause []string) error {
	j.mu.Lock()
	j.avail = avail
	old := j.st.Config
	j.mu.Unlock()
	j.logf("node change: %v", cause)
	for _, c := range cause {
		j.o.rec.event(detected, Event{Kind: EventNodeChange, Change: c})
	}
	conf, change, err := plan.Replan(old, j.availableNodes(), j.spec.Strategy, j.spec.budget(), j.options())
	if err != nil {
		// No valid configuration (e.g. no client left): keep what runs and wait for a change.
		j.o.rec.event(time.Now(), Event{Kind: EventReconfigureFailed, Error: err.Error(), Cause: cause})
		j.logf("reconfigure: %v (waiting for the next node change)", err)
		return nil
	}
	conf = j.spec.withOverrides(conf)
	acts, err := j.apply(ctx, &old, conf, true)
	if err != nil {
		return fmt.Errorf("reconfigure: %w", err)
	}
	applied := time.Now()
	rc := Reconfiguration{Cause: strings.Join(cause, "; "), DetectedAt: unix(detected), AppliedAt: unix(applied),
		ApplyS: applied.Sub(detected).Seconds(), Restarted: acts.restarted, Configured: acts.configured, Stopped: acts.stopped,
		Decision: change.Reason}
	j.mu.Lock()
	j.st.Config = conf
	j.st.Configs++
	j.st.Reconfigurations = append(j.st.Reconfigurations, rc)
	cp := rc
	j.pending = &cp
	j.mu.Unlock()
	j.o.rec.event(applied, Event{Kind: EventReconfigure, Config: &conf, Replan: &change, Reconfiguration: &rc})
	j.logf("reconfigured in %.2f s: %s (%s)", rc.ApplyS, describe(conf), change.Reason)
	return nil
}
