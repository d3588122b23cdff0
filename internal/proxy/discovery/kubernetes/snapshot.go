package kubernetes

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// AttributePrefix marks the Pod labels and annotations that become instance attributes:
// `continuum.io/accuracy: "0.97"` gives Attributes["accuracy"] = "0.97".
const AttributePrefix = "continuum.io/"

// Attributes the source sets itself, before the Pod's own (which override them).
const (
	AttrNamespace = "namespace" // the EndpointSlice's namespace
	AttrZone      = "zone"      // the endpoint's topology zone, when the cluster sets one
)

// preferredPortName is the EndpointSlice port used when a Service exposes several.
const preferredPortName = "http"

// view reads the informers' caches; build is called only from Run's loop.
type view struct {
	slices    discoverylisters.EndpointSliceLister
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister // nil with loads: no metrics client
	selector  labels.Selector
	qualifyNS bool // IDs are "<namespace>/<pod>" (watching all namespaces)
	loads     *nodeMetrics
	log       *slog.Logger
}

type instanceKey struct{ service, id string }

// build assembles a snapshot from the caches. The result is canonical (instances sorted by
// service and ID, empty maps nil) so that Run can compare snapshots to skip no-op updates.
func (v *view) build() (discovery.Snapshot, error) {
	all, err := v.slices.List(labels.Everything())
	if err != nil {
		return discovery.Snapshot{}, fmt.Errorf("list endpointslices: %w", err)
	}
	// Slices are visited in a fixed order so that duplicates (a dual-stack Service has an IPv4
	// and an IPv6 slice naming the same Pods) resolve the same way on every build.
	slices.SortFunc(all, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(addressRank(a.AddressType), addressRank(b.AddressType)), cmp.Compare(a.Name, b.Name))
	})

	var out []discovery.Instance
	seen := map[instanceKey]int{}
	for _, sl := range all {
		// The API server applies the selector already; checking again keeps the snapshot
		// right with clients that do not filter watches (client-go's fake does not).
		if !v.selector.Matches(labels.Set(sl.Labels)) {
			continue
		}
		service := sl.Labels[discoveryv1.LabelServiceName]
		if service == "" {
			continue // not a Service's slice (custom controllers may create such slices)
		}
		port, scheme, ok := pickPort(sl.Ports)
		if !ok {
			v.log.Debug("endpointslice without a usable TCP port skipped", "namespace", sl.Namespace, "name", sl.Name)
			continue
		}
		for _, ep := range sl.Endpoints {
			pod := v.pod(sl.Namespace, ep.TargetRef)
			node := deref(ep.NodeName)
			if node == "" && pod != nil {
				node = pod.Spec.NodeName
			}
			// A nil Ready means "unknown", which the API defines as ready. Terminating
			// endpoints have Ready false, so they stop receiving new requests at once.
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			for i, addr := range ep.Addresses {
				hostport := net.JoinHostPort(addr, strconv.Itoa(int(port)))
				inst := discovery.Instance{
					ID:         v.instanceID(sl.Namespace, ep.TargetRef, i, hostport),
					Service:    service,
					URL:        scheme + "://" + hostport,
					Node:       node,
					Attributes: attributes(sl.Namespace, deref(ep.Zone), pod),
					Ready:      ready,
				}
				k := instanceKey{service, inst.ID}
				if j, dup := seen[k]; dup {
					// Same Pod in two slices (dual stack, or a slice being split): keep one,
					// a ready one if there is one.
					if !out[j].Ready && inst.Ready {
						out[j] = inst
					}
					continue
				}
				seen[k] = len(out)
				out = append(out, inst)
			}
		}
	}
	slices.SortFunc(out, func(a, b discovery.Instance) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.ID, b.ID))
	})

	nodes, err := v.nodeLoads()
	if err != nil {
		return discovery.Snapshot{}, err
	}
	return discovery.Snapshot{Instances: out, Nodes: nodes}, nil
}

// nodeLoads divides the last metrics by each node's allocatable resources. Nodes without
// metrics (or without allocatable numbers) are left out: a missing entry means unknown load.
func (v *view) nodeLoads() (map[string]discovery.NodeLoad, error) {
	if v.loads == nil {
		return nil, nil
	}
	usage := v.loads.get()
	if len(usage) == 0 {
		return nil, nil
	}
	out := map[string]discovery.NodeLoad{}
	for name, u := range usage {
		n, err := v.nodes.Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		var l discovery.NodeLoad
		if c, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok && c.MilliValue() > 0 {
			l.CPU = float64(u.cpuMilli) / float64(c.MilliValue())
		}
		if m, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok && m.Value() > 0 {
			l.Memory = float64(u.memoryBytes) / float64(m.Value())
		}
		if l != (discovery.NodeLoad{}) {
			out[name] = l
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func (v *view) pod(namespace string, ref *corev1.ObjectReference) *corev1.Pod {
	if ref == nil || ref.Kind != "Pod" || ref.Name == "" {
		return nil
	}
	if ref.Namespace != "" {
		namespace = ref.Namespace
	}
	p, err := v.pods.Pods(namespace).Get(ref.Name)
	if err != nil {
		// Not in the cache yet (the slice's event came first): the Pod's own event will
		// trigger another build with its attributes.
		return nil
	}
	return p
}

// instanceID is the Pod's name ("<namespace>/<pod>" when watching all namespaces, since Pod
// names are unique only within one), or host:port for endpoints that are not Pods. An endpoint
// with several addresses (never made by the EndpointSlice controller, which writes one) gets
// the address appended from the second on, so IDs stay unique.
func (v *view) instanceID(namespace string, ref *corev1.ObjectReference, i int, hostport string) string {
	if ref == nil || ref.Kind != "Pod" || ref.Name == "" {
		return hostport
	}
	if ref.Namespace != "" {
		namespace = ref.Namespace
	}
	id := ref.Name
	if v.qualifyNS {
		id = namespace + "/" + ref.Name
	}
	if i > 0 {
		id += "@" + hostport
	}
	return id
}

// attributes: namespace and zone first, then the Pod's prefixed labels, then its prefixed
// annotations, each overriding the one before (annotations are the documented way to set
// attributes; labels are accepted because they are easier to set from a Deployment).
func attributes(namespace, zone string, pod *corev1.Pod) map[string]string {
	a := map[string]string{AttrNamespace: namespace}
	if zone != "" {
		a[AttrZone] = zone
	}
	if pod != nil {
		for _, m := range []map[string]string{pod.Labels, pod.Annotations} {
			for k, val := range m {
				if name, ok := strings.CutPrefix(k, AttributePrefix); ok && name != "" {
					a[name] = val
				}
			}
		}
	}
	return a
}

// pickPort chooses the TCP port named "http", else the first TCP port. https as name or
// appProtocol selects the https scheme.
func pickPort(ports []discoveryv1.EndpointPort) (port int32, scheme string, ok bool) {
	var chosen *discoveryv1.EndpointPort
	for i := range ports {
		p := &ports[i]
		if p.Port == nil || *p.Port <= 0 || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
			continue
		}
		if chosen == nil {
			chosen = p
		}
		if deref(p.Name) == preferredPortName {
			chosen = p
			break
		}
	}
	if chosen == nil {
		return 0, "", false
	}
	scheme = "http"
	if deref(chosen.Name) == "https" || deref(chosen.AppProtocol) == "https" {
		scheme = "https"
	}
	return *chosen.Port, scheme, true
}

func addressRank(t discoveryv1.AddressType) int {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return 0
	case discoveryv1.AddressTypeIPv6:
		return 1
	}
	return 2
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
