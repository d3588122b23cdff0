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
// repeatedly: no request may fail, and requests keep completing while a defragment runs
// (etcd's blocks the member for the whole rewrite). How long requests stall is a figure, not a
// bar here: `continuum bench kv --maintenance` measures it (docs/benchmarks/kv-maintenance.md).
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
	// defragmenting is set while a Defragment call is in flight; during counts the requests
	// that both started and ended inside one.
	var defragmenting atomic.Bool
	var during atomic.Int64
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
				startedDuring := defragmenting.Load()
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
				if startedDuring && defragmenting.Load() {
					during.Add(1)
				}
			}
		}()
	}
	var defragTime time.Duration
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
		defragmenting.Store(true)
		dstart := time.Now()
		_, err = cli.Defragment(ctx, ep)
		defragTime += time.Since(dstart)
		defragmenting.Store(false)
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("slowest request during compaction and defragmentation: %v; defragment calls took %v in all, %d requests completed inside them",
		time.Duration(worst.Load()), defragTime, during.Load())
	// A defragment that blocked the member would let no request through while it runs. Only a
	// defragment long enough for requests to fit in it can show that: 8 clients on loopback
	// complete several requests a millisecond, even under the race detector.
	if defragTime >= 100*time.Millisecond && during.Load() == 0 {
		t.Fatalf("no request completed during %v of defragmentation: it blocked the member", defragTime)
	}
}
