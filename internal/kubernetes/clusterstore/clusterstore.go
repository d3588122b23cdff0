// Package clusterstore is the registry of the stores a one-node cluster's control plane can run
// on (`continuum cluster up --store NAME`): each is a program serving the etcd v3 API to the API
// server, and the system that provides it registers how to start one member (continuum kv from
// the kv system's command package, etcd from the baselines'). The cluster (package
// kubernetes/cluster) looks the configured store up here and starts what it says.
//
// The registry is what makes the dependency visible: the cluster once started kv by its
// command-line string, which no import showed; now the kv system imports this package to
// register, so the import graph (and the layering test) sees the arrow, kv -> kubernetes. It
// is a leaf, so that a system registers a store without linking the Kubernetes client
// libraries the cluster needs.
package clusterstore

import (
	"fmt"
	"sort"
	"sync"
)

// Args is what a store member is started with: everything local to this host.
type Args struct {
	// ContinuumBin is the continuum binary (for stores it runs as a subcommand).
	ContinuumBin string
	// BinDir holds the third-party binaries `make setup` installs (etcd).
	BinDir string
	// DataDir is the member's data directory.
	DataDir string
	// ClientURL is where the API server reaches it (etcd v3 API), MetricsURL where it serves
	// GET /health (200 once it serves clients), PeerURL a peer URL for stores that need one.
	ClientURL, MetricsURL, PeerURL string
}

// Store is a control-plane store.
type Store struct {
	Name string
	// Summary says what it is, for help.
	Summary string
	// Command is the member's command line, or what is missing from a (for Config.Validate,
	// which calls it before anything starts).
	Command func(a Args) ([]string, error)
	// Is reports whether a running process's argv is a member of this store (the cluster's
	// sweep finds the daemons a crashed cluster left behind).
	Is func(argv []string) bool
}

var (
	mu     sync.RWMutex
	stores = map[string]Store{}
)

// Register adds s; it panics on a duplicate or incomplete store (a programming error).
func Register(s Store) {
	if s.Name == "" || s.Command == nil || s.Is == nil {
		panic(fmt.Sprintf("clusterstore.Register: incomplete store %q", s.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := stores[s.Name]; dup {
		panic(fmt.Sprintf("clusterstore.Register: duplicate store %q", s.Name))
	}
	stores[s.Name] = s
}

// Lookup returns the store registered under name, or an error naming the registered ones.
func Lookup(name string) (Store, error) {
	mu.RLock()
	defer mu.RUnlock()
	if s, ok := stores[name]; ok {
		return s, nil
	}
	return Store{}, fmt.Errorf("store %q: want one of %v", name, namesLocked())
}

// Names lists the registered stores, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(stores))
	for n := range stores {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// All returns every registered store, sorted by name.
func All() []Store {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Store, 0, len(stores))
	for _, n := range namesLocked() {
		out = append(out, stores[n])
	}
	return out
}
