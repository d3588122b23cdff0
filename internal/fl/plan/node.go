package plan

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Role is what a node may do in federated learning.
type Role string

const (
	// RoleClient holds data and trains.
	RoleClient Role = "client"
	// RoleAggregator may aggregate: a local aggregator, or the global one when no node is
	// RoleGlobal (then the aggregator the others reach most cheaply is chosen).
	RoleAggregator Role = "aggregator"
	// RoleGlobal is the global aggregator.
	RoleGlobal Role = "global"
)

// Label keys of the seed's Kubernetes-style node features.
const (
	LabelType       = "fl/type" // client | aggregator | local_aggregator | global_aggregator
	LabelCommPrefix = "comm/"   // comm/<peer> = cost per MB from this node to peer
	LabelDataPrefix = "data/"   // data/<class> = samples of that class on this node
)

const rolesAllowed = "client, aggregator, local_aggregator, global_aggregator or global"

// ErrNoRole is returned (wrapped) by NodesFromLabels for a node without the fl/type label: not
// a federated-learning node, which a caller reading every node of a topology skips.
var ErrNoRole = errors.New("no " + LabelType + " label")

// Node is one node's features.
type Node struct {
	ID   string             `json:"id"`
	Role Role               `json:"role"`
	Cost map[string]float64 `json:"cost,omitempty"` // communication cost per MB from this node to node ID (the seed's comm/<peer>)
	Data map[int]int        `json:"data,omitempty"` // class -> samples (the seed's data/<class>); clients only
	CPUs float64            `json:"cpus,omitempty"` // optional resources
}

// ParseRole reads a role in the seed's spellings.
func ParseRole(s string) (Role, error) {
	switch strings.TrimSpace(s) {
	case "client":
		return RoleClient, nil
	case "aggregator", "local_aggregator":
		return RoleAggregator, nil
	case "global", "global_aggregator":
		return RoleGlobal, nil
	}
	return "", fmt.Errorf("role %q: want %s", s, rolesAllowed)
}

// NodesFromLabels reads a node's features from labels in the seed's Kubernetes form:
// fl/type=client|aggregator|local_aggregator|global_aggregator, comm/<peer>=cost,
// data/<class>=count. Other labels are ignored; a node without fl/type gives ErrNoRole.
func NodesFromLabels(id string, labels map[string]string) (Node, error) {
	n := Node{ID: id}
	if id == "" {
		return n, errors.New("node with an empty name")
	}
	t, ok := labels[LabelType]
	if !ok {
		return n, fmt.Errorf("node %s: %w (want %s)", id, ErrNoRole, rolesAllowed)
	}
	role, err := ParseRole(t)
	if err != nil {
		return n, fmt.Errorf("node %s: label %s: %w", id, LabelType, err)
	}
	n.Role = role
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error found is the same every time
	for _, k := range keys {
		v := labels[k]
		switch {
		case strings.HasPrefix(k, LabelCommPrefix):
			if err := n.addCost(strings.TrimPrefix(k, LabelCommPrefix), v); err != nil {
				return n, fmt.Errorf("node %s: label %s: %w", id, k, err)
			}
		case strings.HasPrefix(k, LabelDataPrefix):
			if err := n.addData(strings.TrimPrefix(k, LabelDataPrefix), v); err != nil {
				return n, fmt.Errorf("node %s: label %s: %w", id, k, err)
			}
		}
	}
	return n, nil
}

func (n *Node) addCost(peer, value string) error {
	peer = strings.TrimSpace(peer)
	if peer == "" {
		return errors.New("empty peer name")
	}
	if peer == n.ID {
		return fmt.Errorf("a cost to itself (%s)", peer)
	}
	c, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
		return fmt.Errorf("cost %q to %s: want a number >= 0", value, peer)
	}
	if n.Cost == nil {
		n.Cost = map[string]float64{}
	}
	if _, dup := n.Cost[peer]; dup {
		return fmt.Errorf("two costs to %s", peer)
	}
	n.Cost[peer] = c
	return nil
}

// maxClass bounds class labels so that a typo cannot make the distributions huge.
const maxClass = 1 << 16

func (n *Node) addData(class, value string) error {
	cl, err := strconv.Atoi(strings.TrimSpace(class))
	if err != nil || cl < 0 || cl >= maxClass {
		return fmt.Errorf("class %q: want an integer in [0, %d)", class, maxClass)
	}
	cnt, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || cnt < 0 {
		return fmt.Errorf("sample count %q of class %d: want an integer >= 0", value, cl)
	}
	if n.Data == nil {
		n.Data = map[int]int{}
	}
	if _, dup := n.Data[cl]; dup {
		return fmt.Errorf("two counts for class %d", cl)
	}
	n.Data[cl] = cnt
	return nil
}

// ParseCSV reads the seed's infrastructure file: one node a line,
// id,role,"peer:cost,...","class:count,..." (Fig. 11). Blank lines and lines starting with #
// are skipped, as is a header line whose first field is "id". A file may name peers it does not
// define (nodes that join name the ones already there); Plan rejects a cost to an unknown node.
func ParseCSV(r io.Reader) ([]Node, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var nodes []Node
	lines := map[string]int{}
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("topology csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if first && strings.EqualFold(strings.TrimSpace(rec[0]), "id") {
			first = false // a header line
			continue
		}
		first = false
		if len(rec) < 2 || len(rec) > 4 {
			return nil, fmt.Errorf("topology csv line %d: %d fields: want id,role,\"peer:cost,...\",\"class:count,...\" (the last two may be empty)", line, len(rec))
		}
		for len(rec) < 4 {
			rec = append(rec, "")
		}
		n := Node{ID: strings.TrimSpace(rec[0])}
		if n.ID == "" {
			return nil, fmt.Errorf("topology csv line %d: empty node id", line)
		}
		if prev, dup := lines[n.ID]; dup {
			return nil, fmt.Errorf("topology csv line %d: node %s already defined on line %d", line, n.ID, prev)
		}
		if n.Role, err = ParseRole(rec[1]); err != nil {
			return nil, fmt.Errorf("topology csv line %d: node %s: %w", line, n.ID, err)
		}
		for _, kv := range splitList(rec[2]) {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("topology csv line %d: node %s: cost %q: want peer:cost", line, n.ID, kv)
			}
			if err := n.addCost(k, v); err != nil {
				return nil, fmt.Errorf("topology csv line %d: node %s: %w", line, n.ID, err)
			}
		}
		for _, kv := range splitList(rec[3]) {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("topology csv line %d: node %s: data %q: want class:count", line, n.ID, kv)
			}
			if err := n.addData(k, v); err != nil {
				return nil, fmt.Errorf("topology csv line %d: node %s: %w", line, n.ID, err)
			}
		}
		lines[n.ID] = line
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
