package testbed

import (
	"strings"
	"testing"
)

// A link is named as the topology declares it, whichever order a fault gives its ends in.
func TestLinkNamedAsDeclared(t *testing.T) {
	tb := &Testbed{Topo: &Topology{Links: []Link{{Between: []string{"edge", "cloud"}}, {Between: []string{"device", "edge"}}}},
		links: map[[2]string]int{pairKey("edge", "cloud"): 0, pairKey("device", "edge"): 1}}
	i, err := tb.linkIndex([]string{"cloud", "edge"})
	if err != nil || tb.linkName(i) != "edge-cloud" {
		t.Errorf("link [cloud, edge]: %d %q %v, want edge-cloud", i, tb.linkName(i), err)
	}
	_, err = tb.linkIndex([]string{"cloud", "device"})
	if err == nil || !strings.Contains(err.Error(), "(links: device-edge, edge-cloud)") {
		t.Errorf("unknown link: %v", err)
	}
}
