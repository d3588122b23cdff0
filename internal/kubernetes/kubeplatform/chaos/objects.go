package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Chaos Mesh's API.
const (
	Group   = "chaos-mesh.org"
	Version = "v1alpha1"
)

// NetworkChaosResource is the NetworkChaos resource.
var NetworkChaosResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "networkchaos"}

// Labels the objects select pods by and carry.
const (
	LabelRun  = "continuum.io/run"
	LabelNode = "continuum.io/node"
)

// Queue and MTU size a bandwidth limit's queue as the testbed's does (1000 packets of 1500 bytes,
// like netem's default limit).
const (
	defaultQueue = 1000
	mtu          = 1500
)

// Objects renders the NetworkChaos objects that give the run's node pods the network's current
// state: per unordered pair, a netem object (delay, jitter, loss; direction both) when any is
// set, a bandwidth object when the route is limited, a partition object (direction both) when the
// pair has no route. Names are deterministic (run and pair), so that re-rendering after a fault
// names the same pair's objects alike. Every object carries labels and selects pods by
// continuum.io/run=run plus continuum.io/node=<node>.
func (n *Network) Objects(namespace, run string, labels map[string]string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, p := range n.Paths() {
		base := func(action string) *unstructured.Unstructured {
			l := maps.Clone(labels)
			if l == nil {
				l = map[string]string{}
			}
			l[LabelRun] = run
			spec := map[string]any{
				"action":    action,
				"mode":      "all",
				"selector":  selector(namespace, run, p.A),
				"direction": "both",
				"target":    map[string]any{"mode": "all", "selector": selector(namespace, run, p.B)},
			}
			o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": Group + "/" + Version, "kind": "NetworkChaos", "spec": spec}}
			o.SetName(name(run, p.A, p.B, action))
			o.SetNamespace(namespace)
			o.SetLabels(l)
			return o
		}
		if !p.Reachable {
			out = append(out, base("partition"))
			continue
		}
		if p.Delay > 0 || p.Jitter > 0 || p.Loss > 0 {
			o := base("netem")
			spec := o.Object["spec"].(map[string]any)
			if p.Delay > 0 || p.Jitter > 0 {
				spec["delay"] = map[string]any{"latency": p.Delay.String(), "jitter": p.Jitter.String(), "correlation": "0"}
			}
			if p.Loss > 0 {
				spec["loss"] = map[string]any{"loss": strconv.FormatFloat(p.Loss*100, 'f', -1, 64), "correlation": "0"}
			}
			out = append(out, o)
		}
		if p.Bandwidth > 0 {
			o := base("bandwidth")
			// tc's tbf, as Chaos Mesh drives it: rate in bytes per second ("bps"), a queue of
			// 1000 full packets, and a burst of at least ten packets or 4 ms at the rate.
			bytesPerS := max(p.Bandwidth/8, 1)
			o.Object["spec"].(map[string]any)["bandwidth"] = map[string]any{
				"rate":   strconv.FormatUint(bytesPerS, 10) + "bps",
				"limit":  int64(defaultQueue * mtu),
				"buffer": int64(max(10*mtu, bytesPerS/250)),
			}
			out = append(out, o)
		}
	}
	return out
}

func selector(namespace, run, node string) map[string]any {
	return map[string]any{"namespaces": []any{namespace}, "labelSelectors": map[string]any{LabelRun: run, LabelNode: node}}
}

// name is a DNS label naming the object of a pair and action in run: readable when short
// enough, always unique by a hash of the whole.
func name(run, a, b, action string) string {
	sum := sha256.Sum256([]byte(run + "/" + a + "/" + b + "/" + action))
	h := hex.EncodeToString(sum[:])[:8]
	s := strings.ToLower(action + "-" + a + "-" + b)
	if len(s) > 63-9 {
		s = strings.TrimRight(s[:63-9], "-")
	}
	return s + "-" + h
}

// Installed reports whether the cluster serves chaos-mesh.org/v1alpha1 NetworkChaos.
func Installed(_ context.Context, dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(Group + "/" + Version)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == NetworkChaosResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// Sync makes the NetworkChaos objects in namespace labelled continuum.io/run=run exactly objs:
// server-side apply (field manager "continuum") of each, deletion of the others. dryRun asks the
// API server to validate without persisting (`run --check`).
func Sync(ctx context.Context, dyn dynamic.Interface, namespace, run string, objs []*unstructured.Unstructured, dryRun bool) error {
	rc := dyn.Resource(NetworkChaosResource).Namespace(namespace)
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	want := map[string]bool{}
	var errs []error
	for _, o := range objs {
		want[o.GetName()] = true
		if _, err := rc.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "continuum", Force: true, DryRun: dry}); err != nil {
			errs = append(errs, fmt.Errorf("NetworkChaos %s: %w", o.GetName(), err))
		}
	}
	if dryRun {
		return errors.Join(errs...)
	}
	list, err := rc.List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + run})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, o := range list.Items {
		if !want[o.GetName()] {
			if err := rc.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("NetworkChaos %s: %w", o.GetName(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// DeleteAll deletes every NetworkChaos labelled continuum.io/run=run in namespace.
func DeleteAll(ctx context.Context, dyn dynamic.Interface, namespace, run string) error {
	err := dyn.Resource(NetworkChaosResource).Namespace(namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: LabelRun + "=" + run})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// CRDs are minimal CustomResourceDefinitions of NetworkChaos and PodChaos (namespaced,
// chaos-mesh.org/v1alpha1, any spec), which tests register on a bare control plane to check the
// objects the platform produces and what it does with them. They are not Chaos Mesh: with them a
// cluster stores the objects and nothing applies them.
func CRDs() []*unstructured.Unstructured {
	crd := func(kind, plural string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata":   map[string]any{"name": plural + "." + Group},
			"spec": map[string]any{
				"group": Group,
				"scope": "Namespaced",
				"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
				"versions": []any{map[string]any{
					"name": Version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					}},
				}},
			},
		}}
		return o
	}
	return []*unstructured.Unstructured{crd("NetworkChaos", "networkchaos"), crd("PodChaos", "podchaos")}
}

// CRDResource is the CustomResourceDefinition resource, to create CRDs() with.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
