package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// Source watches a cluster and delivers its Services' endpoints as discovery snapshots.
type Source struct {
	cfg      Config
	client   clientset.Interface
	metrics  metricsclient.Interface // nil: no node loads
	selector labels.Selector
	log      *slog.Logger
}

// New returns a source that reads through client (a real clientset, or client-go's fake in
// tests) and polls node metrics through metrics, which may be nil to leave node loads unknown.
func New(cfg Config, client clientset.Interface, metrics metricsclient.Interface) (*Source, error) {
	if client == nil {
		return nil, fmt.Errorf("kubernetes source: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MetricsInterval.Duration == 0 {
		cfg.MetricsInterval.Duration = DefaultMetricsInterval
	}
	sel, err := labels.Parse(cfg.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("label_selector %q: %w", cfg.LabelSelector, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Source{cfg: cfg, client: client, metrics: metrics, selector: sel}
	s.log = log.With("source", s.Name())
	return s, nil
}

// Name is "kubernetes:<namespace or all namespaces>[,<selector>]".
func (s *Source) Name() string {
	ns := s.cfg.Namespace
	if ns == "" {
		ns = "all-namespaces"
	}
	if s.cfg.LabelSelector != "" {
		return "kubernetes:" + ns + "," + s.cfg.LabelSelector
	}
	return "kubernetes:" + ns
}

// Run starts the informers and the metrics poller, delivers the first snapshot once every
// informer has listed its objects, then one after every change that alters the snapshot. It
// returns nil when ctx is done, after the informers and the poller have stopped.
//
// Unreachable API servers and missing permissions are logged and retried by the informers
// themselves (with backoff); until the first list succeeds there is no snapshot, after it the
// last one stays in force.
func (s *Source) Run(ctx context.Context, update func(discovery.Snapshot)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Event handlers only mark the view dirty; one goroutine (this one) rebuilds the snapshot
	// from the caches and calls update, so update is never called concurrently and a burst of
	// events (a rollout) costs one rebuild per wake-up, not one per event.
	dirty := make(chan struct{}, 1)
	poke := func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}

	// Two factories: the label selector must narrow the EndpointSlices only (Pods do not carry
	// their Service's labels), and a factory applies its list options to all its informers.
	client := listThenWatch{s.client}
	sliceFactory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(s.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = s.cfg.LabelSelector }))
	objFactory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(s.cfg.Namespace))
	slices := sliceFactory.Discovery().V1().EndpointSlices()
	pods := objFactory.Core().V1().Pods()
	type informer struct {
		what      string
		informer  cache.SharedIndexInformer
		transform cache.TransformFunc
	}
	watched := []informer{
		{"endpointslices.discovery.k8s.io", slices.Informer(), stripEndpointSlice},
		{"pods", pods.Informer(), stripPod},
	}
	v := view{
		slices:    slices.Lister(),
		pods:      pods.Lister(),
		selector:  s.selector,
		qualifyNS: s.cfg.Namespace == "",
		log:       s.log,
	}
	// Nodes only matter for dividing metrics by allocatable resources: without a metrics
	// client they are not watched (nor need RBAC). They are cluster-scoped, so the namespace
	// does not apply.
	if s.metrics != nil {
		nodes := objFactory.Core().V1().Nodes()
		watched = append(watched, informer{"nodes", nodes.Informer(), stripNode})
		v.nodes = nodes.Lister()
		v.loads = newNodeMetrics()
	}

	for _, inf := range watched {
		if err := inf.informer.SetTransform(inf.transform); err != nil {
			return fmt.Errorf("kubernetes %s informer: %w", inf.what, err)
		}
		if err := inf.informer.SetWatchErrorHandlerWithContext(s.watchErrorHandler(inf.what)); err != nil {
			return fmt.Errorf("kubernetes %s informer: %w", inf.what, err)
		}
		if _, err := inf.informer.AddEventHandler(handler); err != nil {
			return fmt.Errorf("kubernetes %s informer: %w", inf.what, err)
		}
	}

	var wg sync.WaitGroup
	if s.metrics != nil {
		wg.Go(func() { s.pollMetrics(ctx, v.loads, poke) })
	}
	sliceFactory.StartWithContext(ctx)
	objFactory.StartWithContext(ctx)
	// Stop order: cancel (informers and poller see ctx done), then wait for their goroutines so
	// that nothing of this Run outlives it.
	defer func() {
		cancel()
		sliceFactory.Shutdown()
		objFactory.Shutdown()
		wg.Wait()
	}()

	// The first snapshot waits for the instances and their attributes, not for the Nodes:
	// loads are optional (unknown until known), and a proxy whose RBAC lacks the cluster-scoped
	// Nodes permission should still route.
	if !cache.WaitForCacheSync(ctx.Done(), slices.Informer().HasSynced, pods.Informer().HasSynced) {
		return nil // ctx done before the first complete view
	}

	var last discovery.Snapshot
	sent := false
	for {
		snap, err := v.build()
		if err != nil {
			// Listers read local caches; an error here is a bug, not a cluster problem.
			return fmt.Errorf("kubernetes: build snapshot: %w", err)
		}
		if !sent || !reflect.DeepEqual(snap, last) {
			update(snap)
			last, sent = snap, true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-dirty:
		}
	}
}

// watchErrorHandler logs list/watch failures with our logger and a hint for the common
// cause; the reflector retries on its own with backoff.
func (s *Source) watchErrorHandler(what string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if ctx.Err() != nil {
			return
		}
		msg := "kubernetes list/watch failed; retrying"
		if apierrors.IsForbidden(err) {
			msg = "kubernetes list/watch forbidden; grant get, list and watch (see docs/proxy-discovery.md)"
		}
		s.log.Warn(msg, "resource", what, "err", err)
	}
}

// listThenWatch makes the informers list and then watch instead of using watch-list
// streaming (enabled by default in this client-go). In watch-list mode a refused connection is
// retried inside client-go with a sleep that ignores cancellation (up to a minute) and without
// reaching the watch error handler, so an unreachable API server would go unlogged and delay
// Run's return. What streaming saves is API-server memory on very large lists; in a large
// cluster, set a namespace so that the Pod list stays small.
type listThenWatch struct{ clientset.Interface }

// IsWatchListSemanticsUnSupported is the hook client-go's reflector looks for
// (watchlist.DoesClientNotSupportWatchListSemantics).
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
