package flcmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/fl/plan"
	"github.com/continuum-project/continuum/internal/platform"
)

// readNodes reads node features from the seed's CSV (.csv) or from the node labels of a
// scenario's or topology file's platform.Topology (.yaml, .yml): fl/type, comm/<peer>,
// data/<class>. Nodes without fl/type are not part of federated learning and are skipped.
//
// A scenario is read for its topology only (inline, or its topology_file), without loading
// the rest: that would need every kind of the scenario registered, which the command package
// of one system must not import.
func readNodes(path string) ([]plan.Node, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".csv" && ext != ".yaml" && ext != ".yml" {
		return nil, fmt.Errorf("%s: want a .csv file (id,role,\"peer:cost,...\",\"class:count,...\") or a scenario or topology .yaml", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if ext != ".csv" {
		return yamlNodes(path, data, 0)
	}
	nodes, err := plan.ParseCSV(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nodes, nil
}

func yamlNodes(path string, data []byte, depth int) ([]plan.Node, error) {
	var doc struct {
		Topology     *platform.Topology `yaml:"topology"`
		TopologyFile string             `yaml:"topology_file"`
		Nodes        []platform.Node    `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var tnodes []platform.Node
	switch {
	case doc.Topology != nil:
		tnodes = doc.Topology.Nodes
	case doc.TopologyFile != "" && depth == 0:
		f := doc.TopologyFile
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(path), f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: topology_file: %w", path, err)
		}
		return yamlNodes(f, b, 1)
	default:
		tnodes = doc.Nodes
	}
	var nodes []plan.Node
	for _, tn := range tnodes {
		n, err := plan.NodesFromLabels(tn.Name, tn.Labels)
		if errors.Is(err, plan.ErrNoRole) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n.CPUs = tn.CPUs
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no node has an %s label (client, aggregator or global_aggregator): nothing to plan", path, plan.LabelType)
	}
	return nodes, nil
}
