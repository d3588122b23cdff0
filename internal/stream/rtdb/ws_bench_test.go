package rtdb

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
)

// BenchmarkWSNotify measures one write's trip to a listener: a put by one WebSocket client
// until the change reaches another client listening on the path (what the SDK's onValue
// waits for), beside the same trip through kv alone (a Put until a Watch on the key sees it),
// the baseline in the same run. Each op is one write awaited end to end; p50-us and p99-us are
// the op's latency percentiles.
//
//	go test -run '^$' -bench BenchmarkWSNotify -benchtime 2000x -count 5 ./internal/stream/rtdb/
func BenchmarkWSNotify(b *testing.B) {
	b.Run("kv-watch", func(b *testing.B) {
		url := kvtest.URL(b)
		kv, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		defer kv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wch := kv.Watch(ctx, "/bench/k")
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if _, err := kv.Put(ctx, "/bench/k", fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
			<-wch
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("ws", func(b *testing.B) {
		cfg := DefaultConfig()
		cfg.KVEndpoints = []string{kvtest.URL(b)}
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(s)
		defer func() { hs.Close(); s.Close() }()
		writer, listener := dialWS(b, hs.URL, "bench"), dialWS(b, hs.URL, "bench")
		listener.call("q", map[string]any{"p": "/bench", "h": ""}) // the first value comes before the ok
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			r := writer.req("p", map[string]any{"p": "/bench/k", "d": i})
			for {
				if a, body := push(listener.recv()); a == "d" && body["p"] == "bench/k" {
					break
				}
			}
			lat = append(lat, time.Since(start))
			if s, _, _ := writer.reply(r); s != "ok" {
				b.Fatal(s)
			}
		}
		b.StopTimer()
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

// BenchmarkWSFanout measures one write reaching 1000 listening connections (the issue's
// notification goal is p50 <= 10 ms, p99 <= 50 ms with 1000 listeners on the LAN): each op is a
// put of a record by one more client, until every listener received it. p50-us/p99-us are over
// every (write, listener) delivery; all-p50-us is the median time until the last listener had it.
//
//	go test -run '^$' -bench BenchmarkWSFanout -benchtime 200x -count 3 ./internal/stream/rtdb/
func BenchmarkWSFanout(b *testing.B) {
	const listeners = 1000
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvtest.URL(b)}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()
	got := make(chan time.Time, listeners)
	u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/.ws?v=5&ns=fan"
	listen := []byte(`{"t":"d","d":{"r":1,"a":"q","b":{"p":"/records","h":""}}}`)
	for i := 0; i < listeners; i++ {
		// A bare client: only the pushes' arrival is timed, without decoding them, so the
		// clients (in this process, on the same cores) cost the server as little as they can.
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.WriteMessage(websocket.TextMessage, listen); err != nil {
			b.Fatal(err)
		}
		for { // hello, the first value, the listen's ok
			_, m, err := c.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(m, []byte(`"r":1`)) {
				break
			}
		}
		go func() {
			for {
				_, m, err := c.ReadMessage()
				if err != nil {
					return
				}
				if bytes.Contains(m, []byte(`"a":"d"`)) || bytes.Contains(m, []byte(`"a":"m"`)) {
					got <- time.Now()
				}
			}
		}()
	}
	writer := dialWS(b, hs.URL, "fan")
	var each, all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := writer.req("p", map[string]any{"p": fmt.Sprintf("/records/r%d", i), "d": map[string]any{"user": i, "pad": "x"}})
		var last time.Time
		for range listeners {
			at := <-got
			each = append(each, at.Sub(start))
			last = at
		}
		all = append(all, last.Sub(start))
		writer.reply(r)
	}
	b.StopTimer()
	report(b, each)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "all-p50-us")
}
