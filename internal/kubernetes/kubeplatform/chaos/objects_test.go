package chaos

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

func byName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetName()] = o
	}
	return m
}

func str(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedString(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s: %v missing (%v)", o.GetName(), path, err)
	}
	return v
}

func TestObjectsThreeTier(t *testing.T) {
	n := NewNetwork(threeTier(t))
	labels := map[string]string{"app.kubernetes.io/managed-by": "continuum"}
	objs := byName(n.Objects("ns1", "r1", labels))
	want := []string{"r1-device-edge-netem", "r1-device-edge-bw", "r1-device-cloud-netem", "r1-device-cloud-bw", "r1-edge-cloud-netem", "r1-edge-cloud-bw"}
	if len(objs) != len(want) {
		t.Fatalf("objects %v, want %v", keys(objs), want)
	}
	for _, name := range want {
		o := objs[name]
		if o == nil {
			t.Fatalf("no object %s in %v", name, keys(objs))
		}
		if o.GetNamespace() != "ns1" || o.GetKind() != "NetworkChaos" || o.GetAPIVersion() != "chaos-mesh.org/v1alpha1" {
			t.Fatalf("%s: %s %s in %q", name, o.GetAPIVersion(), o.GetKind(), o.GetNamespace())
		}
		if l := o.GetLabels(); l[RunLabel] != "r1" || l["app.kubernetes.io/managed-by"] != "continuum" {
			t.Fatalf("%s labels %v", name, l)
		}
		if str(t, o, "spec", "direction") != "both" || str(t, o, "spec", "mode") != "all" || str(t, o, "spec", "target", "mode") != "all" {
			t.Fatalf("%s spec %v", name, o.Object["spec"])
		}
	}
	dc := objs["r1-device-cloud-netem"]
	if str(t, dc, "spec", "action") != "netem" || str(t, dc, "spec", "delay", "latency") != "60ms" || str(t, dc, "spec", "delay", "jitter") != "0s" {
		t.Fatalf("device-cloud netem %v", dc.Object["spec"])
	}
	if _, has := dc.Object["spec"].(map[string]any)["loss"]; has {
		t.Fatal("loss rendered without loss")
	}
	sel, _, _ := unstructured.NestedStringMap(dc.Object, "spec", "selector", "labelSelectors")
	tgt, _, _ := unstructured.NestedStringMap(dc.Object, "spec", "target", "selector", "labelSelectors")
	if !reflect.DeepEqual(sel, map[string]string{RunLabel: "r1", NodeLabel: "device"}) || !reflect.DeepEqual(tgt, map[string]string{RunLabel: "r1", NodeLabel: "cloud"}) {
		t.Fatalf("selectors %v -> %v", sel, tgt)
	}
	ns, _, _ := unstructured.NestedStringSlice(dc.Object, "spec", "selector", "namespaces")
	if !reflect.DeepEqual(ns, []string{"ns1"}) {
		t.Fatalf("namespaces %v", ns)
	}
	bw := objs["r1-device-cloud-bw"]
	// 100 Mbit/s = 12,500,000 bytes/s; queue 1000 packets of 1500 bytes; bucket 10 ms of traffic.
	if str(t, bw, "spec", "action") != "bandwidth" || str(t, bw, "spec", "bandwidth", "rate") != "12500000bps" {
		t.Fatalf("device-cloud bw %v", bw.Object["spec"])
	}
	if l, _, _ := unstructured.NestedInt64(bw.Object, "spec", "bandwidth", "limit"); l != 1500*1000 {
		t.Fatalf("limit %d", l)
	}
	if b, _, _ := unstructured.NestedInt64(bw.Object, "spec", "bandwidth", "buffer"); b != 125000 {
		t.Fatalf("buffer %d", b)
	}

	// A partition replaces the cloud pairs' objects with partition objects; the names of
	// unchanged pairs stay, and a re-render gives the same objects.
	apply(t, n, platform.Fault{Action: platform.FaultPartition, Node: "cloud"})
	loss := spec.Percent(0.015)
	apply(t, n, platform.Fault{Action: platform.FaultLink, Link: []string{"device", "edge"}, Loss: &loss})
	first := n.Objects("ns1", "r1", labels)
	objs = byName(first)
	want = []string{"r1-device-edge-netem", "r1-device-edge-bw", "r1-device-cloud-part", "r1-edge-cloud-part"}
	if len(objs) != len(want) {
		t.Fatalf("objects %v, want %v", keys(objs), want)
	}
	for _, name := range want {
		if objs[name] == nil {
			t.Fatalf("no object %s in %v", name, keys(objs))
		}
	}
	if a := str(t, objs["r1-edge-cloud-part"], "spec", "action"); a != "partition" {
		t.Fatalf("action %q", a)
	}
	if l := str(t, objs["r1-device-edge-netem"], "spec", "loss", "loss"); l != "1.5" {
		t.Fatalf("loss %q, want 1.5", l)
	}
	if again := n.Objects("ns1", "r1", labels); !reflect.DeepEqual(first, again) {
		t.Fatal("re-rendering changed the objects")
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestObjectName(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	long := strings.Repeat("n", 32)
	cases := []struct{ run, a, b string }{
		{"r1", "device", "cloud"},
		{"Run_2024.07", "a", "b"},
		{"a-very-long-run-name-for-a-benchmark", long, long[:31] + "x"},
		{"a-very-long-run-name-for-a-benchmark", long, long[:31] + "y"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		for _, kind := range []string{kindNetem, kindBandwidth, kindPartition} {
			name := ObjectName(c.run, c.a, c.b, kind)
			if len(name) > 63 || !dns.MatchString(name) || !strings.HasSuffix(name, "-"+kind) {
				t.Fatalf("ObjectName(%q, %q, %q, %q) = %q: not a DNS label ending in the kind", c.run, c.a, c.b, kind, name)
			}
			if name != ObjectName(c.run, c.a, c.b, kind) {
				t.Fatal("not deterministic")
			}
			if seen[name] {
				t.Fatalf("%q given twice", name)
			}
			seen[name] = true
		}
	}
	if got := ObjectName("r1", "device", "cloud", "netem"); got != "r1-device-cloud-netem" {
		t.Fatalf("short name %q", got)
	}
}

func TestPercentString(t *testing.T) {
	for f, want := range map[float64]string{0.1: "10", 1 - 0.9*0.8: "28", 0.015: "1.5", 1: "100", 0.000001: "0.0001"} {
		if got := percentString(f); got != want {
			t.Errorf("percentString(%g) = %q, want %q", f, got, want)
		}
	}
}
