package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Labels node pods carry (set by the platform); objects select pods by them.
const (
	RunLabel  = "continuum.io/run"
	NodeLabel = "continuum.io/node"
)

// Chaos Mesh's API group and the resources this package writes.
var (
	GroupVersion = schema.GroupVersion{Group: "chaos-mesh.org", Version: "v1alpha1"}
	// NetworkChaosResource is the resource Sync and DeleteAll act on.
	NetworkChaosResource = GroupVersion.WithResource("networkchaos")
)

// Kinds of object rendered per node pair, also the last part of their names.
const (
	kindNetem     = "netem"
	kindBandwidth = "bw"
	kindPartition = "part"
)

// Objects renders the NetworkChaos objects that give the run's node pods the network's current
// state: per unordered pair, a netem object (delay+jitter+loss, direction both) when any is
// non-zero, a bandwidth object when limited, a partition object (direction both) when
// unreachable (and then neither of the others: nothing passes). Names are deterministic
// (objectName) so that re-rendering after a fault gives the same names for the same pairs, and
// Sync updates an object in place rather than deleting and creating it. Every object carries
// labels plus continuum.io/run=run and selects pods by continuum.io/run=run plus
// continuum.io/node=<node>.
//
// Direction both applies a pair's one-way figures to each direction, as the testbed applies a
// link's properties to each direction independently: a 60 ms path is a 120 ms round trip. Chaos
// Mesh documents direction for netem and partition; for bandwidth it filters by target, and both
// is written so that a version honouring direction limits each way (one that does not limits the
// selector's side, A to B, only).
//
// A pod takes part in one object per peer: Chaos Mesh (since it keeps a PodNetworkChaos per pod)
// stacks several NetworkChaos on one pod, each filtered to its target's addresses.
func (n *Network) Objects(namespace, run string, labels map[string]string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, p := range n.Paths() {
		if !p.Reachable {
			objs = append(objs, n.object(namespace, run, labels, p, kindPartition, map[string]any{"action": "partition"}))
			continue
		}
		if p.Delay > 0 || p.Jitter > 0 || p.Loss > 0 {
			spec := map[string]any{"action": "netem"}
			if p.Delay > 0 || p.Jitter > 0 {
				spec["delay"] = map[string]any{
					"latency":     durationString(p.Delay),
					"jitter":      durationString(p.Jitter),
					"correlation": "0",
				}
			}
			if p.Loss > 0 {
				spec["loss"] = map[string]any{"loss": percentString(p.Loss), "correlation": "0"}
			}
			objs = append(objs, n.object(namespace, run, labels, p, kindNetem, spec))
		}
		if p.Bandwidth > 0 {
			objs = append(objs, n.object(namespace, run, labels, p, kindBandwidth, map[string]any{
				"action":    "bandwidth",
				"bandwidth": n.bandwidth(p),
			}))
		}
	}
	return objs
}

// bandwidth renders Chaos Mesh's token bucket for a path.
//
// Chaos Mesh parses rate as an integer with a unit among bps, kbps, mbps, gbps, tbps, and those
// are BYTES per second in steps of 1024 (it hands tc's tbf a byte rate): "100mbps" would be about
// 839 Mbit/s. So the rate is written in plain bytes per second ("12500000bps" for 100 Mbit/s),
// rounded up so that a tiny limit never becomes zero, which is exact for every multiple of 8 bit/s.
// limit (bytes queued waiting for tokens) is the bottleneck link's queue in full-size packets,
// Queue * MTU, like the testbed's queue; buffer (the bucket, bytes sendable at once) is 10 ms of
// traffic at the rate but at least one MTU, since tbf cannot send a packet larger than its bucket
// and a bucket smaller than one timer tick's worth of traffic cannot reach the rate.
func (n *Network) bandwidth(p Path) map[string]any {
	rate := (p.Bandwidth + 7) / 8
	queue := p.Queue
	if queue <= 0 {
		queue = n.queue
	}
	limit := clampUint32(uint64(queue) * uint64(n.mtu))
	buffer := clampUint32(max(uint64(n.mtu), rate/100))
	return map[string]any{
		"rate":   strconv.FormatUint(rate, 10) + "bps",
		"limit":  int64(limit),
		"buffer": int64(buffer),
	}
}

func clampUint32(v uint64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// durationString writes a duration as Chaos Mesh parses it (Go's time.ParseDuration).
func durationString(d time.Duration) string { return d.String() }

// percentString writes a fraction as Chaos Mesh's percentage string ("10" = 10%), to a
// millionth of a percent so that combined losses (1-prod(1-l)) do not print float noise.
func percentString(f float64) string {
	return strconv.FormatFloat(math.Round(f*100*1e6)/1e6, 'f', -1, 64)
}

func (n *Network) object(namespace, run string, labels map[string]string, p Path, kind string, spec map[string]any) *unstructured.Unstructured {
	objLabels := map[string]any{}
	for k, v := range labels {
		objLabels[k] = v
	}
	objLabels[RunLabel] = run
	spec["mode"] = "all"
	spec["selector"] = podSelector(namespace, run, p.A)
	spec["direction"] = "both"
	spec["target"] = map[string]any{"mode": "all", "selector": podSelector(namespace, run, p.B)}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(),
		"kind":       "NetworkChaos",
		"metadata": map[string]any{
			"name":      ObjectName(run, p.A, p.B, kind),
			"namespace": namespace,
			"labels":    objLabels,
		},
		"spec": spec,
	}}
	return u
}

func podSelector(namespace, run, node string) map[string]any {
	return map[string]any{
		"namespaces":     []any{namespace},
		"labelSelectors": map[string]any{RunLabel: run, NodeLabel: node},
	}
}

// maxName is the longest object name: a DNS label, since Chaos Mesh derives other names
// (ipsets, tc handles) from it.
const maxName = 63

// ObjectName is the name of the object of kind (netem, bw, part) for the pair a, b of run:
// "<run>-<a>-<b>-<kind>", lowercased with anything outside [a-z0-9-] replaced by '-'. A name
// that would exceed 63 characters keeps its start and ends in 10 hex digits of the full name's
// SHA-256 before the kind, so that distinct long pairs stay distinct and the name stays the same
// on every render.
func ObjectName(run, a, b, kind string) string {
	base := dnsSafe(run + "-" + a + "-" + b)
	suffix := "-" + kind
	if len(base)+len(suffix) <= maxName {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(run + "\x00" + a + "\x00" + b))
	hash := hex.EncodeToString(sum[:])[:10]
	keep := maxName - len(suffix) - len(hash) - 1
	return strings.TrimRight(base[:keep], "-") + "-" + hash + suffix
}

func dnsSafe(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}
