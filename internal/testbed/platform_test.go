package testbed

import (
	"strings"
	"testing"
)

func TestEndpointRoundTrip(t *testing.T) {
	ep := EndpointFor("/tmp/state", "run1-001")
	if ep != "testbed:run1-001@/tmp/state" {
		t.Fatalf("EndpointFor = %q", ep)
	}
	if ep := (Provider{StateDir: "/tmp/state"}).Endpoint("run1-001"); ep != "testbed:run1-001@/tmp/state" {
		t.Errorf("Provider.Endpoint = %q", ep)
	}
	c, err := ClientFor(ep)
	if err != nil || c.name != "run1-001" {
		t.Fatalf("ClientFor(%q) = %+v, %v", ep, c, err)
	}
	t.Setenv("CONTINUUM_STATE_DIR", "/x")
	if name, dir, err := ParseEndpointAddress("lab"); err != nil || name != "lab" || dir != "/x" {
		t.Errorf("ParseEndpointAddress(lab) = %q %q %v, want the default state dir", name, dir, err)
	}
	for _, bad := range []string{"kubernetes:ns/run1", "testbed:Bad_Name@/x", "run1"} {
		if _, err := ClientFor(bad); err == nil || !strings.Contains(err.Error(), "endpoint") {
			t.Errorf("ClientFor(%q) = %v, want an error naming the endpoint", bad, err)
		}
	}
}
