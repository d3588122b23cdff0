package iot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// MQTTReport is what the MQTT ingress counted.
type MQTTReport struct {
	Broker      string `json:"broker"`
	QoS         int    `json:"qos"`
	Connections int    `json:"connections"` // the devices'
	// Published readings (QoS 1: acknowledged by the broker); PublishFailed those whose
	// publish returned an error (QoS 1: not acknowledged in time).
	Published     int64 `json:"published"`
	PublishFailed int64 `json:"publish_failed"`
	// Received by the adaptors; NotReceived = Published - Received once the adaptors had
	// waited up to 5 s after the devices stopped: lost (QoS 0 may lose readings) or, with QoS
	// 1, still queued at the broker behind a lagging adaptor. Unbatched readings were received
	// into a last batch that never filled, so were not sent.
	Received    int64 `json:"received"`
	NotReceived int64 `json:"not_received"`
	Unbatched   int64 `json:"unbatched"`
}

// Defaults of the MQTT ingress.
const (
	DefaultTopic          = "continuum/iot"
	maxDefaultConnections = 1000
	// publishTick is how often a device connection publishes the readings that became due.
	publishTick = 5 * time.Millisecond
	// lastReadings bounds the wait, after the devices stop, for readings still under way.
	lastReadings = 5 * time.Second
)

func (c *Config) validateMQTT() error {
	if c.Broker == "" {
		if c.QoS != 0 || c.Connections != 0 || c.Topic != "" {
			return errors.New("qos, connections and topic go with broker (the MQTT ingress)")
		}
		return nil
	}
	u, err := url.Parse(c.Broker)
	switch {
	case err != nil || (u.Scheme != "tcp" && u.Scheme != "mqtt") || u.Host == "" || u.Port() == "":
		return fmt.Errorf("broker %q: want tcp://host:port (an MQTT broker)", c.Broker)
	case c.QoS != 0 && c.QoS != 1:
		return fmt.Errorf("qos %d: want 0 (at most once) or 1 (at least once)", c.QoS)
	case c.Connections < 0 || c.Connections > c.Devices:
		return fmt.Errorf("connections %d: want 1..%d (devices), or 0 for one per device up to %d", c.Connections, c.Devices, maxDefaultConnections)
	case strings.ContainsAny(c.Topic, "+#") || strings.HasSuffix(c.Topic, "/"):
		return fmt.Errorf("topic %q: a prefix without wildcards (+, #) or a trailing /", c.Topic)
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Connections == 0 {
		c.Connections = min(c.Devices, maxDefaultConnections)
	}
	return nil
}

// connectionsOf is how many of the device connections gateway g's devices use: its share,
// at least one, at most one per device.
func (c *Config) connectionsOf(g int) int {
	n := int(float64(c.Connections)*float64(c.devicesOf(g))/float64(c.Devices) + 0.5)
	return min(max(n, 1), c.devicesOf(g))
}

// adaptor is one gateway's MQTT adaptor: it receives its devices' readings and cuts them into
// batches of b_s.
type adaptor struct {
	e        *emulator
	start    time.Time     // when its devices began publishing
	interval time.Duration // between its batches: its own devices' (Config.intervalOf)
	inflight atomic.Int64
	dispatch func(*atomic.Int64, time.Time, []byte)

	mu   sync.Mutex
	buf  []byte
	n, k int  // readings in buf; batches cut
	done bool // the run is over: no further batch
}

func (a *adaptor) onMessage(_ mqtt.Client, m mqtt.Message) {
	e := a.e
	e.mqttReceived.Add(1)
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return
	}
	if a.n == 0 {
		a.buf = append(make([]byte, 0, len(m.Payload())*e.cfg.Batch*9/8+2), '[')
	} else {
		a.buf = append(a.buf, ',')
	}
	a.buf = append(a.buf, m.Payload()...)
	a.n++
	if a.n < e.cfg.Batch {
		a.mu.Unlock()
		return
	}
	body := append(a.buf, ']')
	a.k++
	a.buf, a.n = nil, 0
	// Its readings were all due by then: the same schedule as the HTTP ingress's batches.
	at := a.start.Add(time.Duration(a.k) * a.interval)
	if op, ok := e.sess.BeginAt(SeriesIn, at); ok {
		op.End(nil)
	}
	// Still under the lock: once runMQTT has marked the adaptor done, no batch is dispatched
	// any more (Run waits for the senders after it).
	a.dispatch(&a.inflight, at, body)
	a.mu.Unlock()
}

// runMQTT is the MQTT ingress: adaptors subscribe, then the devices publish their readings
// at their rate until the run's end; batches go out through dispatch as they fill.
func (e *emulator) runMQTT(ctx context.Context, t0 time.Time, dispatch func(*atomic.Int64, time.Time, []byte)) (*MQTTReport, error) {
	cfg := e.cfg
	rep := &MQTTReport{Broker: cfg.Broker, QoS: cfg.QoS, Connections: cfg.Connections}
	id := "continuum-" + strconv.Itoa(os.Getpid())
	// The adaptors subscribe first, so no reading is published before someone listens.
	adaptors := make([]*adaptor, cfg.Gateways)
	var clients []mqtt.Client
	defer func() {
		for _, c := range clients {
			c.Disconnect(100)
		}
	}()
	for g := range adaptors {
		a := &adaptor{e: e, start: t0.Add(cfg.offset(g)), interval: cfg.intervalOf(g), dispatch: dispatch}
		adaptors[g] = a
		topic := cfg.Topic + "/" + strconv.Itoa(g) + "/+"
		opts := e.mqttOptions(id + "-adaptor-" + strconv.Itoa(g))
		// After a reconnection the (clean) session has no subscription: make it again.
		opts.SetOnConnectHandler(func(c mqtt.Client) { c.Subscribe(topic, byte(cfg.QoS), a.onMessage) })
		c := mqtt.NewClient(opts)
		if err := wait(c.Connect(), "adaptor %d: connect to %s", g, cfg.Broker); err != nil {
			return rep, err
		}
		clients = append(clients, c)
		// The connect handler subscribes; subscribing here too makes sure it took before the
		// devices start (a second SUBSCRIBE of the same filter replaces the first).
		if err := wait(c.Subscribe(topic, byte(cfg.QoS), a.onMessage), "adaptor %d: subscribe to %s", g, topic); err != nil {
			return rep, err
		}
	}
	var pubs sync.WaitGroup
	for g := 0; g < cfg.Gateways; g++ {
		nc := cfg.connectionsOf(g)
		conns := make([][]int, nc) // device indices per connection
		for d := 0; d < cfg.devicesOf(g); d++ {
			conns[d%nc] = append(conns[d%nc], d)
		}
		for ci, devs := range conns {
			c := mqtt.NewClient(e.mqttOptions(id + "-g" + strconv.Itoa(g) + "-c" + strconv.Itoa(ci)))
			if err := wait(c.Connect(), "gateway %d's devices, connection %d: connect to %s", g, ci, cfg.Broker); err != nil {
				return rep, err
			}
			clients = append(clients, c)
			rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), uint64(g)<<20|uint64(ci)+1))
			p := &publisher{e: e, client: c, rng: rng, start: adaptors[g].start, t0: t0, phase: float64(ci+1) / float64(nc)}
			for _, d := range devs {
				dev := newDevice(g, d, rng)
				p.devices = append(p.devices, dev)
				p.topics = append(p.topics, cfg.Topic+"/"+strconv.Itoa(g)+"/"+dev.id) // <topic>/<gateway>/<sensor_id>
			}
			pubs.Add(1)
			go func() {
				defer pubs.Done()
				p.run(ctx)
			}()
		}
	}
	pubs.Wait()
	// Readings still travelling reach the adaptors within moments (QoS 1: all of them).
	deadline := time.Now().Add(lastReadings)
	for e.mqttReceived.Load() < e.mqttPublished.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	for _, a := range adaptors {
		a.mu.Lock()
		rep.Unbatched += int64(a.n)
		a.done = true // no batch is cut from readings later still
		a.mu.Unlock()
	}
	rep.Published, rep.PublishFailed = e.mqttPublished.Load(), e.mqttFailed.Load()
	rep.Received = e.mqttReceived.Load()
	rep.NotReceived = max(rep.Published-rep.Received, 0)
	return rep, nil
}

func (e *emulator) mqttOptions(clientID string) *mqtt.ClientOptions {
	return mqtt.NewClientOptions().AddBroker(e.cfg.Broker).SetClientID(clientID).SetCleanSession(true).
		SetConnectTimeout(10 * time.Second).SetKeepAlive(30 * time.Second).SetAutoReconnect(true).
		SetMaxReconnectInterval(time.Second).SetWriteTimeout(10 * time.Second)
}

// wait waits for an MQTT operation, up to 15 s.
func wait(t mqtt.Token, what string, args ...any) error {
	if !t.WaitTimeout(15 * time.Second) {
		return fmt.Errorf(what+": no answer within 15 s", args...)
	}
	if err := t.Error(); err != nil {
		return fmt.Errorf(what+": %w", append(args, err)...)
	}
	return nil
}

// publisher is one device connection: its devices publish their readings in turn, at r_m
// each, from start until the run's end.
type publisher struct {
	e         *emulator
	client    mqtt.Client
	rng       *rand.Rand
	start, t0 time.Time
	// phase, in (0, 1], is where in its message period this connection publishes: message n
	// (from 1) is due at start + (n - 1 + phase) / rate. Spread over the gateway's connections,
	// its readings are due evenly, one every 1/(devices x r_m), and the b_s-th exactly when the
	// batch is due; devices in step would publish in bursts no real fleet makes.
	phase   float64
	devices []device
	topics  []string
	pending []mqtt.Token
}

func (p *publisher) run(ctx context.Context) {
	cfg := p.e.cfg
	rate := float64(len(p.devices)) * cfg.Rate
	end := p.t0.Add(cfg.Duration)
	timer := time.NewTimer(time.Until(p.start))
	defer timer.Stop()
	sent, next := 0, 0
	for {
		select {
		case <-ctx.Done():
			p.settle(ctx)
			return
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(end) {
			break
		}
		due := 0
		if x := now.Sub(p.start).Seconds()*rate - p.phase; x >= 0 {
			due = int(x) + 1
		}
		for ; sent < due; sent++ {
			d := &p.devices[next]
			invalid := cfg.Invalid > 0 && p.rng.Float64() < cfg.Invalid
			// The client keeps the payload until it is written: a fresh one each time.
			msg := appendMessage(make([]byte, 0, 128), d, d.next(p.rng), invalid)
			p.pending = append(p.pending, p.client.Publish(p.topics[next], byte(cfg.QoS), false, msg))
			next = (next + 1) % len(p.devices)
		}
		p.reap(false)
		timer.Reset(publishTick)
	}
	p.settle(ctx)
}

// settle waits for the publishes under way (QoS 1: their acknowledgements).
func (p *publisher) settle(ctx context.Context) {
	deadline := time.Now().Add(lastReadings)
	for len(p.pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		p.pending[0].WaitTimeout(time.Until(deadline))
		p.reap(false)
	}
	p.reap(true)
}

// reap counts the publishes that completed; all counts the rest as failed.
func (p *publisher) reap(all bool) {
	kept := p.pending[:0]
	for _, t := range p.pending {
		select {
		case <-t.Done():
			if t.Error() != nil {
				p.e.mqttFailed.Add(1)
			} else {
				p.e.mqttPublished.Add(1)
			}
		default:
			if all {
				p.e.mqttFailed.Add(1)
			} else {
				kept = append(kept, t)
			}
		}
	}
	clear(p.pending[len(kept):])
	p.pending = kept
}
