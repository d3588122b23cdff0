package rtdbbench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/sse"
)

// closedLoop runs cfg.ThroughputWriters writers calling write until the duration ends.
func closedLoop(ctx context.Context, cfg Config, write func(w, i int) error) Throughput {
	var ok, bad atomic.Int64
	end := time.Now().Add(cfg.ThroughputDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.ThroughputWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				if write(w, i) != nil {
					bad.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	return Throughput{Writes: ok.Load(), PerSecond: float64(ok.Load()) / el, Errors: bad.Load()}
}

func rawPutThroughput(ctx context.Context, cfg Config, kvURL string) (Throughput, error) {
	c, err := kvClient(kvURL)
	if err != nil {
		return Throughput{}, err
	}
	defer c.Close()
	return closedLoop(ctx, cfg, func(w, i int) error {
		_, err := c.Put(ctx, fmt.Sprintf("/bench-raw/t/w%d-%d", w, i), `{"seq":1}`)
		return err
	}), nil
}

// restThroughput: closed-loop REST PUTs of records under /tput, with ThroughputListeners
// listening there; they must have seen the last write afterwards.
func restThroughput(ctx context.Context, cfg Config, hc *http.Client, base string) (Throughput, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var readers []*sse.EventReader
	for i := 0; i < cfg.ThroughputListeners; i++ {
		body, err := openStream(lctx, hc, base+"/tput.json?ns=bench")
		if err != nil {
			return Throughput{}, err
		}
		defer body.Close()
		rd := sse.NewEventReader(body)
		if _, err := rd.Next(); err != nil {
			return Throughput{}, err
		}
		readers = append(readers, rd)
	}
	var drained sync.WaitGroup
	var sawLast atomic.Int64
	for _, rd := range readers {
		drained.Add(1)
		go func() {
			defer drained.Done()
			for {
				ev, err := rd.Next()
				if err != nil {
					return
				}
				if bytes.Contains(ev.Data, []byte(`/last"`)) {
					sawLast.Add(1)
					return
				}
			}
		}()
	}
	t := closedLoop(ctx, cfg, func(w, i int) error {
		return put(ctx, hc, fmt.Sprintf("%s/tput/w%d-%d.json?ns=bench&print=silent", base, w, i), fmt.Sprintf(`{"seq":%d}`, i))
	})
	if err := put(ctx, hc, base+"/tput/last.json?ns=bench&print=silent", `{"seq":-1}`); err != nil {
		return t, err
	}
	waitOrTimeout(&drained, 30*time.Second)
	t.ListenerOK = sawLast.Load() == int64(len(readers))
	cancel()
	drained.Wait()
	return t, nil
}
