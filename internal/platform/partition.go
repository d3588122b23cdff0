package platform

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// SamePartition says whether heal names partition p: the same isolated node, the same link (in
// either order), or the same groups (in any order, members in any order). Every platform heals
// partitions by this rule.
func SamePartition(p, heal Fault) bool {
	switch {
	case heal.Node != "":
		return p.Node == heal.Node
	case len(heal.Link) == 2:
		return len(p.Link) == 2 && (p.Link[0] == heal.Link[0] && p.Link[1] == heal.Link[1] ||
			p.Link[0] == heal.Link[1] && p.Link[1] == heal.Link[0])
	default:
		return len(p.Groups) > 0 && slices.Equal(normGroups(p.Groups), normGroups(heal.Groups))
	}
}

func normGroups(gs [][]string) []string {
	var out []string
	for _, g := range gs {
		g = slices.Clone(g)
		sort.Strings(g)
		out = append(out, strings.Join(g, ","))
	}
	sort.Strings(out)
	return out
}

// DescribePartition names a partition (or heal) fault's target for messages and events.csv:
// "node cloud", "link edge-cloud", "groups [[a b] [c]]".
func DescribePartition(f Fault) string {
	switch {
	case f.Node != "":
		return "node " + f.Node
	case len(f.Link) == 2:
		return "link " + f.Link[0] + "-" + f.Link[1]
	case len(f.Groups) > 0:
		return fmt.Sprintf("groups %v", f.Groups)
	}
	return "(none)"
}
