package rtdbbench

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/backoff"
	"github.com/continuum-project/continuum/internal/stream/rtdb"
)

// reconnect: cfg.Listeners listeners on /lat0; the realtime database stops and starts again on
// the same address; each client, seeing its stream end, retries with jittered exponential
// backoff. The figure is the time from the stop until every client has its full put again.
func reconnect(ctx context.Context, cfg Config, hc *http.Client, rs *rtdbServer, kvURL string) (float64, int, error) {
	url := "http://" + rs.addr + "/lat0.json?ns=bench"
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var back sync.WaitGroup
	var backN atomic.Int64
	ready := make(chan error, cfg.Listeners)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Listeners; i++ {
		wg.Add(1)
		back.Add(1)
		go func() {
			defer wg.Done()
			body, err := openStream(lctx, hc, url)
			if err != nil {
				ready <- err
				back.Done()
				return
			}
			rd := rtdb.NewEventReader(body)
			_, err = rd.Next()
			ready <- err
			for err == nil { // until the server goes
				_, err = rd.Next()
			}
			body.Close()
			// Full jitter: each wait is uniform below the delay, which doubles up to 4x.
			retry := backoff.Backoff{Min: cfg.ReconnectBackoff, Max: 4 * cfg.ReconnectBackoff, Jitter: 1}
			for attempt := 0; lctx.Err() == nil; attempt++ {
				time.Sleep(retry.Delay())
				if body, err = openStream(lctx, hc, url); err == nil {
					rd = rtdb.NewEventReader(body)
					if _, err = rd.Next(); err == nil {
						backN.Add(1)
						back.Done()
						<-lctx.Done()
						body.Close()
						return
					}
					body.Close()
				}
			}
			back.Done()
		}()
	}
	for i := 0; i < cfg.Listeners; i++ {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return 0, 0, err
		}
	}
	t0 := time.Now()
	addr := rs.addr
	rs.stop()
	nrs, err := startRTDB(kvURL, addr)
	if err != nil {
		cancel()
		wg.Wait()
		return 0, 0, err
	}
	*rs = nrs
	waitOrTimeout(&back, 60*time.Second)
	el := time.Since(t0).Seconds()
	cancel()
	wg.Wait()
	return el, int(backN.Load()), nil
}
