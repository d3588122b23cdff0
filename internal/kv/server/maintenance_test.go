package server

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCompactionAndDefragUnderLoad runs writers and readers while compacting and defragmenting
// repeatedly: no request may fail, and none may stall for long (etcd's defragment blocks the
// member for the whole rewrite).
func TestCompactionAndDefragUnderLoad(t *testing.T) {
	s, cli := startKV(t)
	ctx := ctxT(t)
	ep := strings.TrimPrefix(s.ClientURLs()[0], "http://")
	val := strings.Repeat("v", 512)
	for i := range 2000 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k/%04d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	var worst atomic.Int64
	var failures atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				start := time.Now()
				var err error
				key := fmt.Sprintf("k/%04d", (g*997+i*31)%2000)
				if i%2 == 0 {
					_, err = cli.Put(ctx, key, val)
				} else {
					_, err = cli.Get(ctx, key)
				}
				if err != nil {
					failures.Add(1)
					t.Errorf("request failed during maintenance: %v", err)
					return
				}
				if d := int64(time.Since(start)); d > worst.Load() {
					worst.Store(d)
				}
			}
		}()
	}
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Defragment(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("slowest request during compaction and defragmentation: %v", time.Duration(worst.Load()))
	// The bar is 50 ms; the race detector slows everything several times over.
	limit := 50 * time.Millisecond
	if raceEnabled {
		limit = 250 * time.Millisecond
	}
	if time.Duration(worst.Load()) > limit {
		t.Fatalf("a request stalled %v (> %v) during maintenance", time.Duration(worst.Load()), limit)
	}
}
