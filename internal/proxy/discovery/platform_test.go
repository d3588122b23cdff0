package discovery

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestPlatformSourceIsThePlatformsOwn(t *testing.T) {
	src, err := ParsePlatformSource(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "testbed:run1-001@/tmp/state"})
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := src.(*TestbedSource)
	if !ok || tb.cfg.Name != "run1-001" || tb.cfg.StateDir != "/tmp/state" || tb.sock != "/tmp/state/run1-001/control.sock" {
		t.Fatalf("source = %#v", src)
	}
	if err := CheckPlatform("testbed:run1-001@/tmp/state"); err != nil {
		t.Error(err)
	}
	for in, want := range map[string]string{
		"nosuch:x":                  "no discovery source for platform nosuch",
		"file:/etc/instances.yaml":  "no discovery source for platform file (platforms with one: testbed)",
		"platform:testbed:x":        "no discovery source for platform platform",
		"run1-001":                  "<platform>:<address>",
		"testbed:Bad_Name@/x/state": "invalid testbed name",
	} {
		_, err := ParsePlatformSource(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: in, Line: 3})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
