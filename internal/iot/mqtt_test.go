package iot

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/results"
)

// TestMQTTIngress: devices publish through a real mosquitto, each gateway's adaptor cuts its
// readings into batches; with QoS 1 every reading published arrives and is batched.
func TestMQTTIngress(t *testing.T) {
	broker := baselinetest.StartMosquitto(t)
	in := &ingress{}
	// 2 gateways x 30 devices at 20 msg/s = 600 msg/s each; batches of 100: one every 1/6 s
	// per gateway over 3 s.
	cfg := Config{Broker: "tcp://" + broker.Target.Endpoints[0], QoS: 1, Connections: 6, Gateways: 2, Devices: 60,
		Rate: 20, Batch: 100, Duration: 3 * time.Second, Invalid: 0.1, Seed: 1}
	rep := run(t, in, cfg)
	m := rep.MQTT
	if m == nil {
		t.Fatal("iot.json without its mqtt counts")
	}
	// Published: what 60 devices at 20/s publish in 3 s (less what a busy machine delays).
	if m.Published < 3000 || m.Published > 3600 || m.PublishFailed != 0 || m.NotReceived != 0 || m.Received != m.Published {
		t.Errorf("mqtt %+v: want ~3600 published, all received (QoS 1), none failed", m)
	}
	// Every received reading is in a sent batch or in the last one, which did not fill.
	if m.Unbatched >= int64(cfg.Batch)*int64(cfg.Gateways) || rep.MessagesSent+m.Unbatched != m.Received {
		t.Errorf("batched %d + unbatched %d, received %d: want them equal, under a batch per gateway left", rep.MessagesSent, m.Unbatched, m.Received)
	}
	if rep.BatchesSent < 28 || rep.BatchesOK != rep.BatchesSent || int64(in.batches) != rep.BatchesSent || in.msgs != int(rep.MessagesSent) {
		t.Errorf("report %+v, ingress saw %d batches, %d messages: want ~34 batches of 100, all answered", rep, in.batches, in.msgs)
	}
	if len(in.sensors) != 60 || in.invalid < int(m.Received)/20 || in.invalid > int(m.Received)/5 {
		t.Errorf("%d sensors, %d invalid of %d: want all 60 sensors, about a tenth invalid", len(in.sensors), in.invalid, m.Received)
	}
	var st results.Stats
	if err := results.ReadJSON(filepath.Join(in.out, results.StatsFile), &st); err != nil {
		t.Fatal(err)
	}
	if tin := st.Series[SeriesIn]; tin.OK != rep.BatchesSent || tin.Latency.P50 <= 0 {
		t.Errorf("t_in %+v: want one per batch sent (%d), each > 0", tin, rep.BatchesSent)
	}
	if rr := st.Series[SeriesRR]; rr.OK != rep.BatchesSent || rr.Latency.P50 < st.Series[SeriesIn].Latency.P50 {
		t.Errorf("t_rr %+v: want one per batch, at least t_in (it includes it)", rr)
	}
}

// TestMQTTBrokerDown: a broker that is not there is a clear error, not a hang.
func TestMQTTBrokerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Run(ctx, Config{Target: "http://127.0.0.1:1/", Broker: "tcp://" + addr, Gateways: 1, Devices: 1, Rate: 1,
		Batch: 1, Duration: time.Second, OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "connect to tcp://"+addr) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("got %v, want a connect error naming the broker", err)
	}
}

func TestMQTTConfigErrors(t *testing.T) {
	ok := Config{Target: "http://x/", Broker: "tcp://b:1883", Gateways: 1, Devices: 10, Rate: 1, Batch: 1, Duration: time.Second}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Broker = "b:1883" }, "want tcp://host:port"},
		{func(c *Config) { c.Broker = "tcp://b" }, "want tcp://host:port"},
		{func(c *Config) { c.QoS = 2 }, "qos 2"},
		{func(c *Config) { c.Connections = 11 }, "connections 11"},
		{func(c *Config) { c.Topic = "a/#" }, "without wildcards"},
		{func(c *Config) { c.Broker = ""; c.QoS = 1 }, "go with broker"},
	} {
		cfg := ok
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	cfg := ok
	if err := cfg.Validate(); err != nil || cfg.Connections != 10 || cfg.Topic != DefaultTopic {
		t.Errorf("defaults: %v, connections %d, topic %q: want one per device, %q", err, cfg.Connections, cfg.Topic, DefaultTopic)
	}
}

// TestMQTTScheduleFromOwnDevices: with devices not a multiple of gateways, each gateway's
// batches fall due on the schedule of its own devices (issue 30, defect 6: the average
// interval made a gateway with fewer devices fall further behind every batch, and one with
// more cut batches before they were due).
func TestMQTTScheduleFromOwnDevices(t *testing.T) {
	broker := baselinetest.StartMosquitto(t)
	// 3 devices on 2 gateways at 10 msg/s, batches of 2: gateway 0 has 2 devices (a batch
	// every 100 ms), gateway 1 has one (every 200 ms); the average would be 133 ms.
	cfg := Config{Broker: "tcp://" + broker.Target.Endpoints[0], QoS: 1, Gateways: 2, Devices: 3,
		Rate: 10, Batch: 2, Duration: 2500 * time.Millisecond, Seed: 1, Target: "http://127.0.0.1:1", OutDir: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &emulator{cfg: cfg}
	var err error
	e.sess, err = loadgen.NewSession(loadgen.Config{Duration: cfg.Duration, OutDir: cfg.OutDir}, []string{SeriesRR, SeriesEx, SeriesIn})
	if err != nil {
		t.Fatal(err)
	}
	defer e.sess.Close(true)
	type batch struct{ due, cut time.Time }
	var mu sync.Mutex
	byGateway := map[*atomic.Int64][]batch{}
	_, err = e.runMQTT(context.Background(), e.sess.T0(), func(g *atomic.Int64, at time.Time, _ []byte) {
		mu.Lock()
		byGateway[g] = append(byGateway[g], batch{at, time.Now()})
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byGateway) != 2 {
		t.Fatalf("batches from %d gateways, want 2", len(byGateway))
	}
	spacings := map[time.Duration]int{}
	for _, bs := range byGateway {
		if len(bs) < 5 {
			t.Fatalf("%d batches from a gateway in 2.5 s: want at least 5", len(bs))
		}
		step := bs[1].due.Sub(bs[0].due)
		spacings[step]++
		for i, b := range bs {
			if i > 0 && b.due.Sub(bs[i-1].due) != step {
				t.Errorf("batch %d due %v after the one before, batch 1 %v: want one interval", i, b.due.Sub(bs[i-1].due), step)
			}
			// Its readings were published when due, and the last of them is due with the
			// batch: a batch cut before it is due is one the schedule got wrong.
			if b.cut.Before(b.due) {
				t.Errorf("batch %d cut %v before it was due", i, b.due.Sub(b.cut))
			}
		}
	}
	if spacings[100*time.Millisecond] != 1 || spacings[200*time.Millisecond] != 1 {
		t.Errorf("intervals between batches %v: want 100 ms (2 devices) and 200 ms (1 device)", spacings)
	}
}
