package orchestrator

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/platform"
)

// LabelFailProb is the node label giving a client's probability of failing a round (the seed's
// unreliable clients), beside plan's fl/type, comm/<peer> and data/<class> labels.
const LabelFailProb = "fl/fail-prob"

// PlatformMembers collects the FL nodes from the labels of the nodes of the platform the
// orchestrator runs on: every node with an fl/type label takes part, as the seed's
// orchestrator read Kubernetes node labels. Each node's service runs on that node.
func PlatformMembers(p platform.Instances) func(context.Context) ([]Member, error) {
	return func(ctx context.Context) ([]Member, error) {
		st, err := p.State(ctx)
		if err != nil {
			return nil, err
		}
		var out []Member
		for _, n := range st.Nodes {
			if _, ok := n.Labels[plan.LabelType]; !ok {
				continue
			}
			m, err := memberFromLabels(n.Name, n.Labels)
			if err != nil {
				return nil, err
			}
			m.Host = n.Name
			out = append(out, m)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no node of the platform has an %s label (give nodes labels such as %s: client, comm/n1: \"100\", data/0: \"1000\")", plan.LabelType, plan.LabelType)
		}
		return out, nil
	}
}

func memberFromLabels(id string, labels map[string]string) (Member, error) {
	n, err := plan.NodesFromLabels(id, labels)
	if err != nil {
		return Member{}, err
	}
	m := Member{Node: n}
	if v, ok := labels[LabelFailProb]; ok {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p > 1 {
			return Member{}, fmt.Errorf("node %s: label %s=%q: want a probability in [0, 1]", id, LabelFailProb, v)
		}
		m.FailProb = p
	}
	return m, nil
}

// CSVMembers reads the seed's topology file (id, role, "peer:cost,...", "class:count,...").
// place maps a node to the host its service runs on: a node listed there runs on that host;
// every other on placeAll when set (the seed's simulated infrastructure: many FL nodes on one
// machine), else on the host of its own name.
func CSVMembers(path string, place map[string]string, placeAll string) func(context.Context) ([]Member, error) {
	return func(context.Context) ([]Member, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		nodes, err := plan.ParseCSV(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out := make([]Member, 0, len(nodes))
		for _, n := range nodes {
			host := place[n.ID]
			if host == "" {
				host = placeAll
			}
			if host == "" {
				host = n.ID
			}
			out = append(out, Member{Node: n, Host: host})
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
		return out, nil
	}
}
