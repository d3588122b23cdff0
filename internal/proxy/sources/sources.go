package sources

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
	"github.com/continuum-project/continuum/internal/proxy/metrics"
)

// Union keeps the latest snapshot of every source and hands their union to apply. apply runs
// under mu, so united snapshots are applied in the order they were formed and an older union
// can never overwrite a newer one.
type Union struct {
	log     *slog.Logger
	m       *metrics.Metrics
	sources []discovery.Source
	apply   func(discovery.Snapshot)
	onReady func()

	mu      sync.Mutex
	snaps   []*discovery.Snapshot
	pending int // sources that have not delivered yet
	status  []Status
	// refused: the (source, ID) pairs already logged as refused (logged once each).
	refused map[[2]string]bool
}

// Status is what /debug/pools and /readyz show about a source.
type Status struct {
	Name      string    `json:"name"`
	Delivered bool      `json:"delivered"`
	Instances int       `json:"instances"`
	Updated   time.Time `json:"updated,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

func New(sources []discovery.Source, log *slog.Logger, m *metrics.Metrics, apply func(discovery.Snapshot), onReady func()) *Union {
	u := &Union{log: log, m: m, sources: sources, apply: apply, onReady: onReady,
		snaps: make([]*discovery.Snapshot, len(sources)), pending: len(sources), status: make([]Status, len(sources))}
	for i, s := range sources {
		u.status[i].Name = s.Name()
	}
	return u
}

func (u *Union) Update(i int, snap discovery.Snapshot) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.snaps[i] == nil {
		u.pending--
	}
	snap.Instances = u.checkLocked(i, snap.Instances)
	u.snaps[i] = &snap
	u.status[i].Delivered, u.status[i].Instances, u.status[i].Updated = true, len(snap.Instances), time.Now()
	u.m.Discovery(u.status[i].Name, len(snap.Instances))
	u.apply(u.mergeLocked())
	if u.pending == 0 && u.onReady != nil {
		u.onReady()
		u.onReady = nil
	}
}

// checkLocked drops the instances whose ID the proxy cannot carry (discovery.CheckInstanceID:
// it is written into every answer's X-Continuum-Instance field, and a CR or LF in it would let
// whoever registered the instance split answers). This is the one check every source's
// instances pass, whatever the source; each refusal is logged once, naming the source and ID.
func (u *Union) checkLocked(i int, list []discovery.Instance) []discovery.Instance {
	var out []discovery.Instance
	for j, in := range list {
		err := discovery.CheckInstanceID(in.ID)
		if err == nil {
			if out != nil {
				out = append(out, in)
			}
			continue
		}
		if out == nil {
			out = append(make([]discovery.Instance, 0, len(list)), list[:j]...)
		}
		key := [2]string{u.status[i].Name, in.ID}
		if !u.refused[key] {
			if u.refused == nil || len(u.refused) >= 1024 {
				u.refused = map[[2]string]bool{} // bounded: at worst a refusal is logged again
			}
			u.refused[key] = true
			u.log.Warn("discovery: refusing an instance whose ID the proxy cannot send", "source", u.status[i].Name,
				"service", in.Service, "id", in.ID, "err", err)
			u.m.DiscoveryError(u.status[i].Name)
		}
	}
	if out == nil {
		return list
	}
	return out
}

// mergeLocked unites the snapshots: an instance ID reported by several sources is taken from
// the first source in configuration order; a node's load is the highest any source reports
// (the cautious reading when sources disagree).
func (u *Union) mergeLocked() discovery.Snapshot {
	var out discovery.Snapshot
	seen := map[string]string{}
	for i, s := range u.snaps {
		if s == nil {
			continue
		}
		for _, in := range s.Instances {
			if first, dup := seen[in.ID]; dup {
				if first != u.status[i].Name {
					u.log.Debug("instance reported by two sources; keeping the first", "instance", in.ID, "kept", first, "ignored", u.status[i].Name)
				}
				continue
			}
			seen[in.ID] = u.status[i].Name
			out.Instances = append(out.Instances, in)
		}
		for name, l := range s.Nodes {
			if out.Nodes == nil {
				out.Nodes = map[string]discovery.NodeLoad{}
			}
			prev := out.Nodes[name]
			out.Nodes[name] = discovery.NodeLoad{CPU: max(prev.CPU, l.CPU), Memory: max(prev.Memory, l.Memory)}
		}
	}
	return out
}

func (u *Union) Statuses() []Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Status(nil), u.status...)
}

// Run runs every source until ctx ends. A source that stops with an error keeps its last
// snapshot and is restarted after a backoff (1 s doubling to 30 s): the proxy keeps routing
// on what it knows rather than exiting because, say, the API server restarted.
func (u *Union) Run(ctx context.Context, wg *sync.WaitGroup) {
	for i, src := range u.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			delay := time.Second
			for {
				err := src.Run(ctx, func(s discovery.Snapshot) { u.Update(i, s) })
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					err = errors.New("returned before the proxy stopped")
				}
				u.log.Error("discovery source stopped; restarting", "source", src.Name(), "err", err, "in", delay)
				u.m.DiscoveryError(src.Name())
				u.mu.Lock()
				u.status[i].LastError = err.Error()
				u.mu.Unlock()
				t := time.NewTimer(delay)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				delay = min(2*delay, 30*time.Second)
			}
		}()
	}
}
