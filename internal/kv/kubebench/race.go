package kubebench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
)

// raceStore runs the race settings of store: for kv, a cluster of cfg.RaceMembers members with
// apiservers A and C on member 1 and B on member 2 (A+B: different members; A+C: one member);
// for etcd, two apiservers on one etcd.
func raceStore(ctx context.Context, cfg Config, store string, rep int, dir string) []RaceRun {
	fail := func(settings []string, err error) []RaceRun {
		var out []RaceRun
		for _, s := range settings {
			out = append(out, RaceRun{Setting: s, Repeat: rep, Error: err.Error()})
		}
		return out
	}
	var endpoints []string // the store endpoint of each apiserver
	var settings []string
	var pairs [][2]int // indexes into endpoints per setting
	switch store {
	case StoreKV:
		settings = []string{RaceKVTwoMembers, RaceKVOneMember}
		members, err := startKVCluster(ctx, cfg, cfg.RaceMembers, filepath.Join(dir, "kv"))
		if err != nil {
			return fail(settings, err)
		}
		defer stopAll(members)
		m1, m2 := members[0].Target.Endpoints[0], members[1].Target.Endpoints[0]
		endpoints = []string{m1, m2, m1}
		pairs = [][2]int{{0, 1}, {0, 2}}
	case StoreEtcd:
		settings = []string{RaceEtcd}
		srv, err := startStore(ctx, cfg, StoreEtcd, filepath.Join(dir, "etcd"))
		if err != nil {
			return fail(settings, err)
		}
		defer srv.Stop()
		e := srv.Target.Endpoints[0]
		endpoints = []string{e, e}
		pairs = [][2]int{{0, 1}}
	}
	clients := make([]kubernetes.Interface, len(endpoints))
	cps := make([]*controlplane.ControlPlane, len(endpoints))
	errs := make([]error, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() {
			cp, _, err := startAPIServer(ctx, cfg, ep, filepath.Join(dir, fmt.Sprintf("apiserver-%d", i+1)))
			if err != nil {
				errs[i] = fmt.Errorf("kube-apiserver %d: %w", i+1, err)
				return
			}
			cps[i] = cp
			cs, err := benchClient(cp)
			clients[i], errs[i] = cs, err
		})
	}
	wg.Wait()
	defer func() {
		for _, cp := range cps {
			if cp != nil {
				cp.Stop()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return fail(settings, err)
	}
	var out []RaceRun
	for i, s := range settings {
		a, b := clients[pairs[i][0]], clients[pairs[i][1]]
		r := race(ctx, cfg, a, b, fmt.Sprintf("counter-%d", i))
		r.Setting, r.Repeat = s, rep
		out = append(out, r)
	}
	return out
}

// race creates a ConfigMap with counter 0 through a, waits until b sees it, then runs
// cfg.RaceWriters goroutines on each of a and b, each making cfg.RaceIncrements successful
// read-modify-write increments (Get, +1, Update; a Conflict is counted and retried), then waits
// until a and b read the same counter and reports it with the updates lost.
func race(ctx context.Context, cfg Config, a, b kubernetes.Interface, name string) RaceRun {
	var r RaceRun
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": "0"}}
	if _, err := a.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		r.Error = "create counter: " + err.Error()
		return r
	}
	if _, err := waitCounter(ctx, b, name, func(int64) bool { return true }); err != nil {
		r.Error = "counter not visible on the second apiserver: " + err.Error()
		return r
	}
	var successes, conflicts, other atomic.Int64
	var firstErr atomic.Value
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, cs := range []kubernetes.Interface{a, b} {
		cms := cs.CoreV1().ConfigMaps("default")
		for range cfg.RaceWriters {
			wg.Go(func() {
				for done := 0; done < cfg.RaceIncrements && ctx.Err() == nil; {
					cur, err := cms.Get(ctx, name, metav1.GetOptions{})
					if err == nil {
						var n int64
						if n, err = strconv.ParseInt(cur.Data["n"], 10, 64); err == nil {
							cur.Data["n"] = strconv.FormatInt(n+1, 10)
							_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
						}
					}
					switch {
					case err == nil:
						successes.Add(1)
						done++
					case apierrors.IsConflict(err):
						conflicts.Add(1)
					default:
						firstErr.CompareAndSwap(nil, err.Error())
						if other.Add(1) > 100 {
							return // something is broken; the error says what
						}
						sleep(ctx, 50*time.Millisecond)
					}
				}
			})
		}
	}
	wg.Wait()
	r.DurationS = time.Since(t0).Seconds()
	r.Successes, r.Conflicts, r.OtherErrors = successes.Load(), conflicts.Load(), other.Load()
	if e, ok := firstErr.Load().(string); ok {
		r.Error = e
	}
	// Both apiservers' stores converge (kv replicates between members); read until they agree.
	deadline := time.Now().Add(20 * time.Second)
	for {
		va, errA := readCounter(ctx, a, name)
		vb, errB := readCounter(ctx, b, name)
		if errA == nil && errB == nil && va == vb {
			r.Final, r.Agreed = va, true
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.Final = va
			if r.Error == "" {
				r.Error = fmt.Sprintf("apiservers disagree after 20 s: %d vs %d (%v, %v)", va, vb, errA, errB)
			}
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}
	r.Lost = r.Successes - r.Final
	return r
}

func readCounter(ctx context.Context, cs kubernetes.Interface, name string) (int64, error) {
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(cm.Data["n"], 10, 64)
}

// waitCounter reads the counter through cs until ok accepts it (30 s at most).
func waitCounter(ctx context.Context, cs kubernetes.Interface, name string, ok func(int64) bool) (int64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := readCounter(ctx, cs, name)
		if err == nil && ok(v) {
			return v, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("counter %d", v)
			}
			return v, err
		}
		sleep(ctx, 100*time.Millisecond)
	}
}
