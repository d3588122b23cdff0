package kubebench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/promtext"
)

// namespace holds the measured ConfigMaps.
const namespace = "kubebench"

// measureStore starts store and kube-apiserver on it in dir, measures the operations, the
// footprint and (if configured) the restart, and stops both.
func measureStore(ctx context.Context, cfg Config, store string, rep int, dir string) StoreRun {
	run := StoreRun{Store: store, Repeat: rep, Ops: map[string]OpLatency{}}
	srv, err := startStore(ctx, cfg, store, dir+"/store")
	if err != nil {
		run.Error = "store: " + err.Error()
		return run
	}
	defer srv.Stop()
	cp, took, err := startAPIServer(ctx, cfg, srv.Target.Endpoints[0], dir+"/controlplane")
	if err != nil {
		run.Error = "kube-apiserver: " + err.Error()
		return run
	}
	defer cp.Stop()
	run.APIServerStartS = took.Seconds()
	cs, err := benchClient(cp)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		run.APIServerVersion = v.GitVersion
	}
	if cli, err := kvtarget.NewEtcd(srv.Target.Endpoints, 1); err == nil {
		if st, err := cli.Status(ctx); err == nil {
			run.StoreVersion = st.Version
		}
		cli.Close()
	}
	if err := measureOps(ctx, cfg, cs, &run, func() {
		run.StoreRSS, _ = srv.RSS()
		run.StoreDisk, _ = srv.DiskBytes()
		run.APIServerRSS, _ = apiserverRSS(ctx, cs)
	}); err != nil {
		run.Error = err.Error()
		return run
	}
	for _, down := range cfg.RestartDowns {
		r := measureRestart(ctx, cfg, srv, cp, cs, down)
		run.Restarts = append(run.Restarts, r)
		if r.Error != "" {
			break // the store or the apiserver did not come back: the next would measure nothing
		}
	}
	return run
}

// benchClient is an admin clientset without client-go's default rate limit (5 requests/s),
// which would measure the limiter rather than the apiserver.
func benchClient(cp *controlplane.ControlPlane) (*kubernetes.Clientset, error) {
	rc := cp.RESTConfig()
	rc.QPS, rc.Burst = -1, 0
	rc.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// measureOps creates, gets, updates, lists and deletes cfg.Objects ConfigMaps with cfg.Clients
// callers, timing each request, with a watch timing the creates' delivery; footprint runs
// between the lists and the deletes.
func measureOps(ctx context.Context, cfg Config, cs kubernetes.Interface, run *StoreRun, footprint func()) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	cms := cs.CoreV1().ConfigMaps(namespace)
	name := func(i int) string { return fmt.Sprintf("cm-%05d", i) }
	value := strings.Repeat("v", cfg.ValueBytes)

	// Watch delivery: from a create's request to its ADDED event.
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	var sent sync.Map // name -> time.Time
	var delivered []float64
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			if t, ok := sent.Load(cm.Name); ok {
				delivered = append(delivered, float64(time.Since(t.(time.Time)).Microseconds())/1000)
				if len(delivered) == cfg.Objects {
					return
				}
			}
		}
	}()

	objs := make([]*corev1.ConfigMap, cfg.Objects)
	run.Ops[OpCreate] = timeEach(cfg.Objects, cfg.Clients, func(i int) error {
		sent.Store(name(i), time.Now())
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name(i)}, Data: map[string]string{"v": value}}, metav1.CreateOptions{})
		objs[i] = cm
		return err
	})
	select {
	case <-watchDone:
	case <-time.After(30 * time.Second):
	}
	w.Stop()
	<-watchDone
	run.Ops[OpWatch] = latencyOf(delivered, cfg.Objects-len(delivered), nil)
	if l := run.Ops[OpCreate]; l.Errors > 0 {
		return fmt.Errorf("creates failed (%d): %s", l.Errors, l.Error)
	}

	run.Ops[OpGet] = timeEach(cfg.Objects, cfg.Clients, func(i int) error {
		_, err := cms.Get(ctx, name(i), metav1.GetOptions{})
		return err
	})
	run.Ops[OpUpdate] = timeEach(cfg.Objects, cfg.Clients, func(i int) error {
		cm := objs[i].DeepCopy()
		cm.Data["v"] = strings.Repeat("u", cfg.ValueBytes)
		_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	run.Ops[OpList] = timeEach(cfg.Lists, cfg.Clients, func(int) error {
		n, cont := 0, ""
		for {
			l, err := cms.List(ctx, metav1.ListOptions{Limit: int64(cfg.PageSize), Continue: cont})
			if err != nil {
				return err
			}
			n += len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		if n != cfg.Objects {
			return fmt.Errorf("paginated list returned %d ConfigMaps, want %d", n, cfg.Objects)
		}
		return nil
	})
	footprint()
	run.Ops[OpDelete] = timeEach(cfg.Objects, cfg.Clients, func(i int) error {
		return cms.Delete(ctx, name(i), metav1.DeleteOptions{})
	})
	return nil
}

// timeEach runs f(0..n-1) on clients goroutines and summarizes the latencies of the calls that
// succeeded.
func timeEach(n, clients int, f func(i int) error) OpLatency {
	var next atomic.Int64
	var mu sync.Mutex
	var samples []float64
	var errs int
	var first error
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := f(i)
				ms := float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				if err != nil {
					errs++
					if first == nil {
						first = err
					}
				} else {
					samples = append(samples, ms)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return latencyOf(samples, errs, first)
}

// apiserverRSS reads kube-apiserver's resident memory from its own /metrics
// (process_resident_memory_bytes): the control plane does not expose its process id.
func apiserverRSS(ctx context.Context, cs kubernetes.Interface) (int64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	m, err := promtext.Parse(strings.NewReader(string(raw)))
	if err != nil {
		return 0, err
	}
	v, ok := m["process_resident_memory_bytes"]
	if !ok {
		return 0, fmt.Errorf("kube-apiserver /metrics has no process_resident_memory_bytes")
	}
	return int64(v), nil
}
