package orchestrator

import (
	"sort"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// Partition generates the clients' data instead of taking it from their data/<class> features,
// as the seed's pilot experiments split the data set (§3.3.1, Figs. 6-8): the training split is
// cut into Splits equal parts (0: one per client), each client holds one part, made of
// LabelsPerClient classes in equal shares. Client i (in ID order) holds the classes starting at
// (i*LabelsPerClient) mod classes, so every class is held by as many clients as the others.
// The generated counts are also what the configuration strategies see.
type Partition struct {
	LabelsPerClient int `json:"labels_per_client,omitempty"`
	Splits          int `json:"splits,omitempty"`
}

// trainSize is the size of each data set's training split (python/src/continuum_fl/data.py),
// which a split divides; a request above what a class has is scaled down by the clients.
var trainSize = map[string]int{"digits": 1437, "mnist1d": 4000, "cifar10": 50000}

const classes = 10

func (p Partition) enabled() bool { return p.LabelsPerClient > 0 }

// validate is a *FieldError naming the field out of range for clients clients (0: not known
// yet), or nil.
func (p Partition) validate(clients int) error {
	switch {
	case p.LabelsPerClient < 0 || p.LabelsPerClient > classes:
		return fieldErrorf("labels_per_client", "%d: want 1-%d (0: the nodes' own data features)", p.LabelsPerClient, classes)
	case p.Splits < 0:
		return fieldErrorf("splits", "%d: want >= 0 (0: one per client)", p.Splits)
	case p.Splits > 0 && !p.enabled():
		return fieldErrorf("splits", "%d needs labels_per_client", p.Splits)
	case p.Splits > 0 && p.Splits < clients:
		return fieldErrorf("splits", "%d: want at least one per client (%d clients)", p.Splits, clients)
	}
	return nil
}

// apply replaces the data of every client in ms: the clients taking part first (in ID order;
// the splits are theirs), then the excluded ones, which may join later.
func (p Partition) apply(ms []Member, dataset string, excluded func(id string) bool) error {
	var clients []int
	for i := range ms {
		if len(ms[i].Data) > 0 || ms[i].Role == plan.RoleClient {
			clients = append(clients, i)
		}
	}
	sort.Slice(clients, func(a, b int) bool {
		ea, eb := excluded(ms[clients[a]].ID), excluded(ms[clients[b]].ID)
		if ea != eb {
			return !ea
		}
		return ms[clients[a]].ID < ms[clients[b]].ID
	})
	taking := 0
	for _, i := range clients {
		if !excluded(ms[i].ID) {
			taking++
		}
	}
	if err := p.validate(taking); err != nil {
		return err
	}
	clients = clients[:taking+min(len(clients)-taking, max(p.Splits-taking, 0))]
	for i := range ms {
		if excluded(ms[i].ID) && ms[i].Role == plan.RoleClient {
			ms[i].Data = nil // beyond the splits: no data unless a split is left for it
		}
	}
	splits := p.Splits
	if splits == 0 {
		splits = taking
	}
	per := trainSize[dataset] / splits
	share := max(per/p.LabelsPerClient, 1)
	for n, i := range clients {
		d := map[int]int{}
		for j := 0; j < p.LabelsPerClient; j++ {
			d[(n*p.LabelsPerClient+j)%classes] += share
		}
		ms[i].Data = d
	}
	return nil
}
