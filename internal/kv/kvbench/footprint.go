package kvbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// footprintKeyBase numbers the records the footprint phase inserts: far above any key a YCSB
// run inserts (runs insert from RecordCount upward), so the two never collide, while KeyName
// still gives them the same shape and length as the loaded records.
const footprintKeyBase = 1 << 40

// grow inserts n records of the workload's value size into st with the given number of
// concurrent clients, so that memory and disk can be read at a realistic key count rather
// than extrapolated from a small one (a server's fixed costs, such as a heap-goal floor or
// preallocated log segments, would otherwise be scaled up with the keys).
func grow(ctx context.Context, st kvtarget.Store, w ycsb.Workload, n int64, clients int) error {
	val := make([]byte, w.ValueSize())
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range val {
		val[i] = byte('a' + rng.IntN(26))
	}
	value := string(val)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range max(clients, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				key := w.KeyName(footprintKeyBase + i)
				if err := st.Insert(ctx, key, value); err != nil {
					errs <- fmt.Errorf("footprint insert %q: %w", key, err)
					next.Store(n) // stop the other clients
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}
