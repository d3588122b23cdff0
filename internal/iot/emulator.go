// Package iot is the IoT ecosystem emulator of seeds/001 (§4.1): software devices attached to
// gateways, each device producing sensor messages at a rate, and an adaptor per gateway that
// batches them and POSTs each batch as a JSON array to the edge processing's ingress (a
// function, a microservice, or the function gateway) over keep-alive HTTP.
//
// It is open loop, as devices are: a batch is due when its messages have been produced, and is
// sent then whether or not earlier batches were answered. A batch's request-reply time t_rr
// runs from when it was due (a slow ingress cannot slow the devices down and hide its own
// delay); the execution time t_ex is what the function reports in X-Handler-Seconds.
package iot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/httptarget"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/results"
)

// Config is one emulator process: Gateways gateways sharing Devices devices evenly.
type Config struct {
	// Target is the URL batches are POSTed to.
	Target string
	// Gateways (g) and Devices (d, in total); Rate (r_m) is messages per second per device;
	// Batch (b_s) messages per POST.
	Gateways, Devices int
	Rate              float64
	Batch             int
	// Invalid is the share of messages made invalid (a reading out of its type's range), to
	// exercise the function's validation; the seed's are all valid (0).
	Invalid float64
	// Timeout bounds a batch from when it was due (default DefaultTimeout); past it the batch
	// counts as a timeout.
	Timeout time.Duration
	// MaxInflight bounds the batches one gateway has outstanding (default 1000); a due batch
	// beyond it is dropped and counted.
	MaxInflight int
	// Broker, if set (tcp://host:port), makes the ingress MQTT: every device publishes each
	// reading to the broker on Topic/<gateway>/<sensor_id> over Connections connections, and
	// each gateway's adaptor subscribes to its devices' topics, batches b_s readings as they
	// arrive and POSTs the batch to Target.
	Broker string
	// QoS is the MQTT quality of service of the readings, both ways: 0 (default) or 1.
	QoS int
	// Connections the devices publish over (default one per device, at most 1000), spread
	// over the gateways as their devices are.
	Connections int
	// Topic is the readings' topic prefix (default "continuum/iot").
	Topic            string
	Duration, Warmup time.Duration
	Seed             int64
	OutDir           string
	Progress         io.Writer
}

// DefaultTimeout is Config.Timeout's default: a batch answered more than a minute after it was
// due is a timeout.
const DefaultTimeout = time.Minute

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	u, err := url.Parse(c.Target)
	switch {
	case c.Target == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("target %q: want an http:// URL to POST batches to", c.Target)
	case c.Gateways < 1:
		return fmt.Errorf("gateways %d: want >= 1", c.Gateways)
	case c.Devices < c.Gateways:
		return fmt.Errorf("devices %d: want at least one per gateway (%d)", c.Devices, c.Gateways)
	case c.Rate <= 0:
		return fmt.Errorf("rate %g: want messages per second per device > 0", c.Rate)
	case c.Batch < 1:
		return fmt.Errorf("batch %d: want >= 1 message", c.Batch)
	case c.Invalid < 0 || c.Invalid > 1:
		return fmt.Errorf("invalid %g: want a share between 0 and 1", c.Invalid)
	case c.Timeout < 0 || c.MaxInflight < 0:
		return errors.New("timeout and max in-flight must be >= 0")
	case c.Duration <= 0 || c.Warmup < 0 || c.Warmup >= c.Duration:
		return fmt.Errorf("duration %v, warmup %v: want duration > 0 and 0 <= warmup < duration", c.Duration, c.Warmup)
	}
	if err := c.validateMQTT(); err != nil {
		return err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 1000
	}
	return nil
}

// Interval is how often one gateway's batch is due: b_s / (its devices x r_m).
func (c *Config) Interval() time.Duration {
	perGateway := float64(c.Devices) / float64(c.Gateways)
	return time.Duration(float64(c.Batch) / (perGateway * c.Rate) * float64(time.Second))
}

// intervalOf is the time gateway g's own devices take to produce a batch. It differs from
// Interval, the mean, when the devices are not a multiple of the gateways: each gateway's
// batches fall due on its own schedule.
func (c *Config) intervalOf(g int) time.Duration {
	return time.Duration(float64(c.Batch) / (float64(c.devicesOf(g)) * c.Rate) * float64(time.Second))
}

// Report is iot.json: what was generated and sent, beside the t_rr and t_ex series.
type Report struct {
	Gateways       int     `json:"gateways"`
	Devices        int     `json:"devices"`
	Rate           float64 `json:"rate"`
	Batch          int     `json:"batch"`
	IntervalMS     float64 `json:"interval_ms"` // between one gateway's batches
	BatchesDue     int64   `json:"batches_due"`
	BatchesSent    int64   `json:"batches_sent"`
	BatchesOK      int64   `json:"batches_ok"`
	BatchesDropped int64   `json:"batches_dropped"` // over MaxInflight: not sent
	MessagesSent   int64   `json:"messages_sent"`
	BytesSent      int64   `json:"bytes_sent"`
	// BadReplies are 200s whose body did not account for the whole batch ("received").
	BadReplies int64 `json:"bad_replies"`
	// MessagesPerS is the offered load actually sent, over the run's duration (not the wait
	// for the last answers after it); CPUCores what generating and sending it took this process
	// (CPU seconds per second, the wait included).
	MessagesPerS float64 `json:"messages_per_s"`
	CPUCores     float64 `json:"cpu_cores"`
	// MQTT is the MQTT ingress's counts (absent with the HTTP ingress).
	MQTT *MQTTReport `json:"mqtt,omitempty"`
}

// ReportFile is the Report's name in OutDir.
const ReportFile = "iot.json"

// Series the emulator records.
const (
	SeriesRR = "t_rr" // request-reply time from when the batch was due
	SeriesEx = "t_ex" // the function's execution time (X-Handler-Seconds)
	// SeriesIn is the MQTT ingress's delay: from when a batch was due (its readings
	// published) until its adaptor had received them all.
	SeriesIn = "t_in"
)

// HandlerSecondsHeader is where a function reports its execution time.
const HandlerSecondsHeader = "X-Handler-Seconds"

type emulator struct {
	cfg    Config
	client *http.Client
	sess   *loadgen.Session
	rep    Report
	// counters updated by senders
	sent, ok, dropped, msgs, bytes, bad atomic.Int64
	// the MQTT ingress's readings
	mqttPublished, mqttFailed, mqttReceived atomic.Int64
}

// Run emulates for cfg.Duration and writes the outputs.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &emulator{cfg: cfg, client: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: cfg.MaxInflight * cfg.Gateways, IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	}}}
	defer e.client.CloseIdleConnections()
	var err error
	series := []string{SeriesRR, SeriesEx}
	if cfg.Broker != "" {
		series = append(series, SeriesIn)
	}
	// A batch records both t_rr and t_ex: count batches once, by their request-reply.
	e.sess, err = loadgen.NewSession(loadgen.Config{Duration: cfg.Duration, Warmup: cfg.Warmup, OutDir: cfg.OutDir,
		Progress: cfg.Progress, CountSeries: []string{SeriesRR}}, series)
	if err != nil {
		return nil, err
	}
	cpu0 := procstat.SelfCPU().Seconds()
	t0 := e.sess.T0()
	interval := cfg.Interval()
	var senders sync.WaitGroup
	var due atomic.Int64
	// dispatch sends a gateway's batch that was due at `at`, unless the gateway has too many
	// outstanding.
	dispatch := func(inflight *atomic.Int64, at time.Time, body []byte) {
		due.Add(1)
		if inflight.Load() >= int64(cfg.MaxInflight) {
			e.dropped.Add(1)
			e.sess.Observe(SeriesRR, 0, errDropped)
			return
		}
		inflight.Add(1)
		senders.Add(1)
		go func() {
			defer senders.Done()
			defer inflight.Add(-1)
			e.send(ctx, at, body)
		}()
	}
	var mq *MQTTReport
	if cfg.Broker != "" {
		mq, err = e.runMQTT(ctx, t0, dispatch)
	} else {
		e.runHTTP(ctx, t0, dispatch)
	}
	senders.Wait()
	elapsed := time.Since(t0)
	e.rep = Report{Gateways: cfg.Gateways, Devices: cfg.Devices, Rate: cfg.Rate, Batch: cfg.Batch,
		IntervalMS: results.Millis(interval), BatchesDue: due.Load(), BatchesSent: e.sent.Load(),
		BatchesOK: e.ok.Load(), BatchesDropped: e.dropped.Load(), MessagesSent: e.msgs.Load(), BytesSent: e.bytes.Load(),
		BadReplies: e.bad.Load(), MessagesPerS: float64(e.msgs.Load()) / min(elapsed, cfg.Duration).Seconds(),
		CPUCores: (procstat.SelfCPU().Seconds() - cpu0) / elapsed.Seconds(), MQTT: mq}
	if err != nil {
		_, _ = e.sess.Close(true)
		return &e.rep, err
	}
	res, err := e.sess.Close(ctx.Err() != nil)
	if err != nil {
		return &e.rep, err
	}
	if cfg.OutDir != "" {
		if err := results.WriteJSON(filepath.Join(cfg.OutDir, ReportFile), &e.rep); err != nil {
			return &e.rep, err
		}
	}
	return &e.rep, res.Failure()
}

// runHTTP is the seed's ingress: each gateway's adaptor holds its devices' readings and POSTs
// a batch whenever b_s of them have been produced (the devices are simulated in place: a
// batch's readings are generated when it is due).
func (e *emulator) runHTTP(ctx context.Context, t0 time.Time, dispatch func(*atomic.Int64, time.Time, []byte)) {
	cfg := e.cfg
	var gws sync.WaitGroup
	for g := 0; g < cfg.Gateways; g++ {
		gw := newGateway(g, cfg.devicesOf(g), cfg.Seed, cfg.Invalid)
		start := t0.Add(cfg.offset(g))
		interval := cfg.intervalOf(g)
		gws.Add(1)
		go func() {
			defer gws.Done()
			var inflight atomic.Int64
			body := gw.batch(cfg.Batch, nil)
			for k := 0; ; k++ {
				// A batch is due once its b_s messages have been produced: the first one
				// interval after the gateway's start.
				at := start.Add(time.Duration(k+1) * interval)
				if at.Sub(t0) >= cfg.Duration {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(at)):
				}
				dispatch(&inflight, at, body)
				// The next batch fills while this one is under way.
				body = gw.batch(cfg.Batch, make([]byte, 0, len(body)+len(body)/8))
			}
		}()
	}
	gws.Wait()
}

// devicesOf is how many devices gateway g has (the devices spread evenly).
func (c *Config) devicesOf(g int) int {
	n := c.Devices / c.Gateways
	if g < c.Devices%c.Gateways {
		n++
	}
	return n
}

// offset staggers the gateways' batches over one interval, as independent devices would be.
func (c *Config) offset(g int) time.Duration {
	return time.Duration(float64(c.Interval()) * float64(g) / float64(c.Gateways))
}

var (
	errDropped    = errors.New("batch dropped: too many batches in flight")
	errNoExecTime = errors.New("answer without " + HandlerSecondsHeader)
)

// send POSTs one batch due at `at` and records its t_rr (and t_ex).
func (e *emulator) send(ctx context.Context, at time.Time, body []byte) {
	// Both series begin at dispatch, so a batch answered after the run's end still counts.
	op, ok := e.sess.BeginAt(SeriesRR, at)
	if !ok {
		return
	}
	opEx, _ := e.sess.Begin(SeriesEx)
	rctx, cancel := context.WithDeadline(ctx, at.Add(e.cfg.Timeout))
	defer cancel()
	e.sent.Add(1)
	e.msgs.Add(int64(e.cfg.Batch))
	e.bytes.Add(int64(len(body)))
	tex, err := e.post(rctx, body)
	op.End(err)
	switch {
	case err != nil:
		opEx.End(err) // never executed, as far as the emulator knows
	case tex > 0:
		e.ok.Add(1)
		opEx.EndWith(tex)
	default:
		e.ok.Add(1)
		opEx.End(errNoExecTime)
	}
}

func (e *emulator) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.Target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 400 {
		return 0, &httptarget.StatusError{Code: resp.StatusCode}
	}
	var out struct {
		Received *int `json:"received"`
	}
	if json.Unmarshal(reply, &out) != nil || out.Received == nil || *out.Received != e.cfg.Batch {
		e.bad.Add(1)
	}
	var tex time.Duration
	if s, err := strconv.ParseFloat(resp.Header.Get(HandlerSecondsHeader), 64); err == nil && s > 0 {
		tex = time.Duration(s * float64(time.Second))
	}
	return tex, nil
}

// gateway is one software IoT gateway with its devices, interleaving their messages in the
// order they arrive (round robin: every device produces at the same rate).
type gateway struct {
	devices []device
	next    int
	rng     *rand.Rand
	invalid float64
}

func newGateway(index, devices int, seed int64, invalid float64) *gateway {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)+1))
	g := &gateway{rng: rng, invalid: invalid}
	for i := 0; i < devices; i++ {
		g.devices = append(g.devices, newDevice(index, i, rng))
	}
	return g
}

// batch appends the next n messages as a JSON array to b.
func (g *gateway) batch(n int, b []byte) []byte {
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		d := &g.devices[g.next]
		g.next = (g.next + 1) % len(g.devices)
		b = appendMessage(b, d, d.next(g.rng), g.invalid > 0 && g.rng.Float64() < g.invalid)
	}
	return append(b, ']')
}
