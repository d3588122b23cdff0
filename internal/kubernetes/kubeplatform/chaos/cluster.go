package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/continuum-project/continuum/internal/platform"
)

// FieldManager owns the fields Sync applies.
const FieldManager = "continuum"

// NeedsChaosMesh says why a scenario needs Chaos Mesh (a link with a non-zero property, a fault
// with action partition, heal or link), or "" when it does not.
func NeedsChaosMesh(topo *platform.Topology, faults []platform.Fault) string {
	if topo != nil {
		for _, l := range topo.Links {
			var set []string
			if l.Delay.Duration != 0 {
				set = append(set, "delay")
			}
			if l.Jitter.Duration != 0 {
				set = append(set, "jitter")
			}
			if l.Loss != 0 {
				set = append(set, "loss")
			}
			if l.Bandwidth != 0 {
				set = append(set, "bandwidth")
			}
			if len(set) > 0 {
				return fmt.Sprintf("link %s sets %s", strings.Join(l.Between, "-"), strings.Join(set, ", "))
			}
		}
	}
	if topo != nil {
		// The testbed connects only what its links connect; a cluster's network connects every
		// pod, so a pair without a route needs a partition object from the start.
		for _, p := range NewNetwork(topo).Paths() {
			if !p.Reachable {
				return fmt.Sprintf("nodes %s and %s have no route between them", p.A, p.B)
			}
		}
	}
	for _, f := range faults {
		switch f.Action {
		case platform.FaultPartition, platform.FaultHeal, platform.FaultLink:
			return fmt.Sprintf("the scenario injects a %s fault", f.Action)
		}
	}
	return ""
}

// Installed reports whether the cluster serves chaos-mesh.org/v1alpha1 NetworkChaos, by
// discovery. A cached discovery client may answer from before Chaos Mesh was installed: pass a
// fresh one (or invalidate it) after installing.
func Installed(ctx context.Context, dc discovery.DiscoveryInterface) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == NetworkChaosResource.Resource && r.Kind == "NetworkChaos" {
			return true, nil
		}
	}
	return false, nil
}

// runSelector selects a run's objects.
func runSelector(run string) string { return RunLabel + "=" + run }

// Sync makes the cluster's NetworkChaos objects in namespace labelled continuum.io/run=run exactly
// objs: creates or updates them (server-side apply with field manager "continuum", forcing
// ownership so that a hand edit does not block the run), deletes the others. dryRun: server-side
// dry run (nothing persisted), for `run --check`. Each object must be a NetworkChaos of namespace
// labelled with the run, as Objects renders them: otherwise the next Sync would not find it.
//
// Objects are applied before the others are deleted, so a change (partition to heal, say) never
// passes through a moment with neither the old nor the new conditions in force.
func Sync(ctx context.Context, dyn dynamic.Interface, namespace, run string, objs []*unstructured.Unstructured, dryRun bool) error {
	want := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "NetworkChaos" || o.GetAPIVersion() != GroupVersion.String() {
			return fmt.Errorf("sync %s: object %q is %s %s, want %s NetworkChaos", run, o.GetName(), o.GetAPIVersion(), o.GetKind(), GroupVersion)
		}
		if o.GetNamespace() != namespace || o.GetLabels()[RunLabel] != run {
			return fmt.Errorf("sync %s: object %q must be in namespace %q with label %s (has namespace %q, label %q)",
				run, o.GetName(), namespace, runSelector(run), o.GetNamespace(), o.GetLabels()[RunLabel])
		}
		if want[o.GetName()] {
			return fmt.Errorf("sync %s: object %q appears twice", run, o.GetName())
		}
		want[o.GetName()] = true
	}
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	res := dyn.Resource(NetworkChaosResource).Namespace(namespace)
	for _, o := range objs {
		if _, err := res.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: dry}); err != nil {
			return fmt.Errorf("sync %s: apply NetworkChaos %s/%s: %w", run, namespace, o.GetName(), err)
		}
	}
	stale, err := list(ctx, dyn, namespace, run)
	if err != nil {
		return err
	}
	for _, name := range stale {
		if want[name] {
			continue
		}
		err := res.Delete(ctx, name, metav1.DeleteOptions{DryRun: dry})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("sync %s: delete NetworkChaos %s/%s: %w", run, namespace, name, err)
		}
	}
	return nil
}

// DeleteAll deletes every NetworkChaos labelled continuum.io/run=run in namespace.
func DeleteAll(ctx context.Context, dyn dynamic.Interface, namespace, run string) error {
	names, err := list(ctx, dyn, namespace, run)
	if err != nil {
		return err
	}
	res := dyn.Resource(NetworkChaosResource).Namespace(namespace)
	for _, name := range names {
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete NetworkChaos %s/%s of run %s: %w", namespace, name, run, err)
		}
	}
	return nil
}

// list names the run's objects in namespace, sorted.
func list(ctx context.Context, dyn dynamic.Interface, namespace, run string) ([]string, error) {
	l, err := dyn.Resource(NetworkChaosResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector(run)})
	if err != nil {
		return nil, fmt.Errorf("list NetworkChaos of run %s in %s: %w", run, namespace, err)
	}
	names := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		names = append(names, it.GetName())
	}
	sort.Strings(names)
	return names, nil
}
