package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// Status is a job's state as GET /jobs/current answers it.
type Status struct {
	State    string      `json:"state"` // starting, running, stopping, done, failed
	Reason   string      `json:"reason,omitempty"`
	Job      JobSpec     `json:"job"`
	Started  time.Time   `json:"started"`
	Round    int         `json:"round"`
	Accuracy *float64    `json:"accuracy,omitempty"`
	Loss     *float64    `json:"loss,omitempty"`
	Spent    float64     `json:"cost_spent"`
	Config   plan.Config `json:"config"`
	Configs  int         `json:"configurations"`
	// Reconfigurations lists every reconfiguration with its timings.
	Reconfigurations []Reconfiguration `json:"reconfigurations,omitempty"`
	Available        []string          `json:"available"`
}

// Reconfiguration is one node change handled: when it was seen, when the new configuration was
// in place, and when the global model next completed a round.
type Reconfiguration struct {
	Cause      string   `json:"cause"`
	DetectedAt float64  `json:"detected_at"`
	AppliedAt  float64  `json:"applied_at"`
	ApplyS     float64  `json:"apply_s"`
	ResumedAt  float64  `json:"resumed_at,omitempty"`
	ResumeS    float64  `json:"resume_s,omitempty"` // detected -> first global round completed after
	Restarted  []string `json:"restarted,omitempty"`
	Configured []string `json:"configured,omitempty"`
	Stopped    []string `json:"stopped,omitempty"`
	Decision   string   `json:"decision"`
}

type run struct {
	o    *Orchestrator
	spec JobSpec
	done chan struct{}

	reports chan Report
	stopReq chan string

	mu      sync.Mutex
	st      Status
	members map[string]Member
	ports   map[string]int
	avail   map[string]bool
	left    map[string]string // node -> why it left (a service exit keeps it out until it joins)
	running map[string]Service
	pending *Reconfiguration // awaiting the first global round after it
	stopped bool
}

func newRun(o *Orchestrator, spec JobSpec) *run {
	return &run{o: o, spec: spec, done: make(chan struct{}), reports: make(chan Report, 256), stopReq: make(chan string, 1),
		st: Status{State: "starting", Job: spec, Started: time.Now()}, left: map[string]string{}, running: map[string]Service{}}
}

func (j *run) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

func (j *run) status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Reconfigurations = append([]Reconfiguration(nil), st.Reconfigurations...)
	st.Available = nil
	for id, ok := range j.avail {
		if ok {
			st.Available = append(st.Available, id)
		}
	}
	sort.Strings(st.Available)
	return st
}

func (j *run) report(r Report) {
	select {
	case j.reports <- r:
	default: // the loop is behind; per-round lines are also in each service's fl.jsonl
	}
}

func (j *run) requestStop(reason string) {
	select {
	case j.stopReq <- reason:
	default:
	}
}

// options are the orchestrator's planning options with the job's reconfiguration gain and seed.
func (j *run) options() plan.Options {
	o := j.o.cfg.Options
	o.MinGain = j.spec.MinGain
	o.Seed = uint64(j.spec.Seed)
	return o
}

func (j *run) logf(format string, args ...any) { j.o.cfg.Logf(format, args...) }

func (j *run) fail(err error) {
	j.logf("job failed: %v", err)
	j.o.rec.event("failed", time.Now(), map[string]any{"error": err.Error()})
	j.mu.Lock()
	j.st.State, j.st.Reason = "failed", err.Error()
	j.mu.Unlock()
	j.stopAll()
}

// loop is the controller's workflow (the seed's Fig. 2): collect features, configure, deploy,
// then monitor until the target is reached, reconfiguring on node changes.
func (j *run) loop(ctx context.Context) {
	defer close(j.done)
	ms, err := j.o.cfg.Members(ctx)
	if err != nil {
		j.fail(fmt.Errorf("collect node features: %w", err))
		return
	}
	if j.spec.Partition.enabled() {
		if err := j.spec.Partition.apply(ms, j.spec.Dataset, j.o.isRemoved); err != nil {
			j.fail(fmt.Errorf("partition: %w", err))
			return
		}
	}
	j.members = map[string]Member{}
	j.ports = map[string]int{}
	for i, id := range sortedIDs(ms) {
		j.ports[id] = j.o.cfg.BasePort + i
	}
	for _, m := range ms {
		j.members[m.ID] = m
	}
	if err := j.writePartition(); err != nil {
		j.fail(err)
		return
	}
	obs, err := j.o.cfg.Runner.Observe(ctx)
	if err != nil {
		j.fail(fmt.Errorf("observe the nodes: %w", err))
		return
	}
	j.avail = j.availability(obs)
	conf, err := plan.Plan(j.availableNodes(), j.spec.Strategy, j.spec.budget(), j.options())
	if err != nil {
		j.fail(fmt.Errorf("configure: %w", err))
		return
	}
	conf = j.spec.withOverrides(conf)
	j.o.rec.event("configure", time.Now(), map[string]any{"config": conf, "available": j.status().Available})
	j.logf("configuration: %s", describe(conf))
	if _, err := j.apply(ctx, nil, conf, j.spec.Resume); err != nil {
		j.fail(fmt.Errorf("deploy: %w", err))
		return
	}
	j.mu.Lock()
	j.st.Config, j.st.Configs, j.st.State = conf, 1, "running"
	j.mu.Unlock()

	tick := time.NewTicker(j.o.cfg.Poll)
	defer tick.Stop()
	var stopDeadline time.Time
	for {
		select {
		case <-ctx.Done():
			j.stopAll()
			j.setDone("cancelled")
			return
		case reason := <-j.stopReq:
			if stopDeadline.IsZero() {
				stopDeadline = j.beginStop(ctx, reason)
			}
		case rep := <-j.reports:
			if reason := j.onReport(rep); reason != "" && stopDeadline.IsZero() {
				stopDeadline = j.beginStop(ctx, reason)
			}
		case <-tick.C:
		case <-j.o.wake:
		}
		if !stopDeadline.IsZero() {
			if j.globalExited(ctx) || time.Now().After(stopDeadline) {
				j.stopAll()
				j.setDone("")
				return
			}
			continue
		}
		if finished, err := j.monitor(ctx); err != nil {
			j.fail(err)
			return
		} else if finished {
			j.stopAll()
			j.setDone(fmt.Sprintf("%d global rounds done", j.spec.Rounds))
			return
		}
	}
}

// onReport takes a service's report line; it returns a stop reason when the job's target is
// reached.
func (j *run) onReport(r Report) string {
	if r.Role != "global" || r.Event != "round" {
		return ""
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	c := j.st.Config
	j.st.Spent += c.CostPerEpoch * float64(c.Epochs*max(c.LocalRounds, 1))
	j.st.Round, j.st.Accuracy, j.st.Loss = r.Round, r.Accuracy, r.Loss
	j.o.rec.round(r, j.st.Spent, j.st.Configs)
	if p := j.pending; p != nil && r.T >= p.AppliedAt {
		p.ResumedAt, p.ResumeS = r.T, r.T-p.DetectedAt
		j.st.Reconfigurations[len(j.st.Reconfigurations)-1] = *p
		j.o.rec.event("resumed", time.Now(), map[string]any{"round": r.Round, "resume_s": p.ResumeS, "detected_at": p.DetectedAt})
		j.pending = nil
	}
	switch {
	case j.spec.TargetAccuracy > 0 && r.Accuracy != nil && *r.Accuracy >= j.spec.TargetAccuracy:
		return fmt.Sprintf("target accuracy %.3f reached at round %d (%.4f)", j.spec.TargetAccuracy, r.Round, *r.Accuracy)
	case j.spec.MaxCost > 0 && j.st.Spent >= j.spec.MaxCost:
		return fmt.Sprintf("communication budget %.0f spent at round %d (%.0f)", j.spec.MaxCost, r.Round, j.st.Spent)
	case r.Round >= j.spec.Rounds:
		return fmt.Sprintf("%d global rounds done", j.spec.Rounds)
	}
	return ""
}

func (j *run) setDone(reason string) {
	j.mu.Lock()
	if j.st.State != "failed" {
		j.st.State = "done"
		if reason != "" && j.st.Reason == "" {
			j.st.Reason = reason
		}
	}
	st := j.st
	j.mu.Unlock()
	j.o.rec.event("stop", time.Now(), map[string]any{"reason": st.Reason, "round": st.Round, "accuracy": st.Accuracy, "cost_spent": st.Spent})
	j.logf("job done: %s", st.Reason)
}

// beginStop asks the global aggregator to finish its round and exit; the loop then waits for it
// (bounded by the round timeout) before stopping everything.
func (j *run) beginStop(ctx context.Context, reason string) time.Time {
	j.mu.Lock()
	j.st.State, j.st.Reason = "stopping", reason
	global := j.st.Config.Global
	j.mu.Unlock()
	j.logf("stopping: %s", reason)
	_ = j.control(ctx, global, "/stop", nil)
	return time.Now().Add(time.Duration(j.spec.RoundTimeout*float64(time.Second)) + 10*time.Second)
}

func (j *run) globalExited(ctx context.Context) bool {
	obs, err := j.o.cfg.Runner.Observe(ctx)
	if err != nil {
		return false
	}
	_, gone := obs.Exited[serviceName("global", j.status().Config.Global)]
	return gone
}

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
	for name, how := range obs.Exited {
		j.mu.Lock()
		svc, ok := j.running[name]
		if ok {
			delete(j.running, name)
		}
		j.mu.Unlock()
		if !ok {
			continue
		}
		j.o.rec.event("service-exited", now, map[string]any{"service": name, "node": svc.Node, "how": how})
		if svc.Node == conf.Global {
			if how == "exit 0" {
				return true, nil // its rounds are done
			}
			// The global aggregator is indispensable: started again, it continues from the
			// model repository's latest snapshot.
			j.logf("global aggregator %s exited (%s): starting it again from the latest snapshot", name, how)
			if err := j.startService(ctx, j.globalService(conf, true)); err != nil {
				return false, err
			}
			j.o.rec.event("service-restarted", time.Now(), map[string]any{"service": name, "resume": true, "restart_s": time.Since(now).Seconds()})
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
		return false, nil
	}
	sort.Strings(cause)
	return false, j.reconfigure(ctx, now, avail, cause)
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
		j.o.rec.event("node-change", detected, map[string]any{"change": c})
	}
	conf, change, err := plan.Replan(old, j.availableNodes(), j.spec.Strategy, j.spec.budget(), j.options())
	if err != nil {
		// No valid configuration (e.g. no client left): keep what runs and wait for a change.
		j.o.rec.event("reconfigure-failed", time.Now(), map[string]any{"error": err.Error(), "cause": cause})
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
	j.o.rec.event("reconfigure", applied, map[string]any{"config": conf, "change": change, "reconfiguration": rc})
	j.logf("reconfigured in %.2f s: %s (%s)", rc.ApplyS, describe(conf), change.Reason)
	return nil
}

type actions struct{ restarted, configured, stopped []string }

// apply moves the running services from old (nil: nothing runs) to conf, touching only what
// differs: services of nodes no longer in conf stop; a new or moved global aggregator starts
// (from the latest snapshot when resume); a local aggregator starts when new or when its parent
// moved, and is reconfigured over its control API when only its client count, epochs or local
// rounds changed; a client starts when new or when its parent changed or restarted.
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
	if !j.isRunning(gname) {
		if err := j.startService(ctx, j.globalService(conf, resume)); err != nil {
			return acts, err
		}
		restartedAgg[conf.Global] = true
		acts.restarted = append(acts.restarted, gname)
	} else if old != nil && (childCount(*old, old.Global) != childCount(conf, conf.Global) || len(conf.Clusters) == 0 && old.Epochs != conf.Epochs) {
		// (Under local aggregators the global one's epochs are not used: they pass their own.)
		if err := j.control(ctx, conf.Global, "/config", map[string]any{"min_clients": childCount(conf, conf.Global), "epochs": conf.Epochs}); err != nil {
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
		if !j.isRunning(name) || restartedAgg[conf.Global] && oldParent[c.Aggregator] != conf.Global {
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
				if err := j.control(ctx, c.Aggregator, "/config", map[string]any{"min_clients": len(c.Clients), "epochs": conf.Epochs, "local_rounds": conf.LocalRounds}); err != nil {
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
	if err := j.o.cfg.Runner.Start(ctx, s); err != nil {
		return err
	}
	j.mu.Lock()
	j.running[s.Name] = s
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

// controlAddr is where node id's aggregator serves its control API.
func (j *run) controlAddr(id string) string {
	return j.o.cfg.Runner.Addr(j.members[id].Host, j.ports[id]+1000)
}

func (j *run) flowerAddr(id string) string {
	return j.o.cfg.Runner.Addr(j.members[id].Host, j.ports[id])
}

var controlClient = &http.Client{Timeout: 5 * time.Second}

// control POSTs body to an aggregator's control API.
func (j *run) control(ctx context.Context, id, path string, body any) error {
	b, _ := json.Marshal(body)
	if body == nil {
		b = []byte("{}")
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+j.controlAddr(id)+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+j.o.ControlToken(id))
	resp, err := controlClient.Do(req)
	if err != nil {
		return fmt.Errorf("aggregator %s %s: %w", id, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("aggregator %s %s: %s", id, path, resp.Status)
	}
	return nil
}

// readyTimeout bounds a new aggregator's start (Python with PyTorch on a busy 2-core machine).
const readyTimeout = 120 * time.Second

// waitReady waits until node id's aggregator answers its control API's /status.
func (j *run) waitReady(ctx context.Context, id string) error {
	deadline := time.Now().Add(readyTimeout)
	url := "http://" + j.controlAddr(id) + "/status"
	name := serviceName(roleIn(j.status().Config, id), id)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+j.o.ControlToken(id))
		resp, err := controlClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
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
			return fmt.Errorf("aggregator %s not ready at %s after %v", id, url, readyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (j *run) writePartition() error {
	clients := map[string]map[string]int{}
	for id, m := range j.members {
		if len(m.Data) == 0 {
			continue
		}
		d := map[string]int{}
		for c, n := range m.Data {
			d[strconv.Itoa(c)] = n
		}
		clients[id] = d
	}
	b, err := json.MarshalIndent(map[string]any{"dataset": j.spec.Dataset, "seed": j.spec.Seed, "clients": clients}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(j.partitionPath(), b, 0o644)
}

func (j *run) partitionPath() string { return filepath.Join(j.o.cfg.Out, "partition.json") }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
