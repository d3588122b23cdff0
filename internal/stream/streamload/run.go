package streamload

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/procstat"
	"github.com/continuum-project/continuum/internal/results"
)

// Output files, beside the load engine's stats.json, timeseries.csv, percentiles.csv (the
// end-to-end latency CDF) and latency.hlog.
const (
	ReportFile   = "streamload.json"     // Report
	TimelineFile = "stream-timeline.csv" // per second of sending: sent, acked, received, lost, last receipt
	RecordsFile  = "records.csv.gz"      // per record: its latency and receipts
)

// Series of stats.json: e2e is a record's end-to-end latency from when it was due to its
// first receipt by the subscriber (lost records are its errors, type "lost"); ack is the
// send's request-reply time from when it was due.
const (
	SeriesE2E = "e2e"
	SeriesAck = "ack"
)

// TimelineHeader is the header of TimelineFile.
var TimelineHeader = []string{"t_s", "sent", "acked", "received", "lost", "last_receipt_s"}

// Report is streamload.json: the run's accounting.
type Report struct {
	Run          string  `json:"run"`
	Send         string  `json:"send"`
	Subscribe    string  `json:"subscribe"`
	Users        int     `json:"users"`
	Requests     int     `json:"requests"`
	Payload      int     `json:"payload_bytes"`
	IntervalMS   float64 `json:"interval_ms"`
	IntervalSDMS float64 `json:"interval_sd_ms"`
	// T0UnixUS is the session's start, which the timeline's seconds count from.
	T0UnixUS int64 `json:"t0_unix_us"`
	// Planned is users x requests; Sent is what was sent before the duration ended.
	Planned int64 `json:"planned"`
	Sent    int64 `json:"sent"`
	// Acked were acknowledged (2xx); Unacked failed or timed out and never arrived.
	Acked   int64 `json:"acked"`
	Unacked int64 `json:"unacked"`
	// Received arrived at the subscriber at least once (ReceivedUnacked of them without an
	// acknowledgement: the server committed them but the answer failed).
	Received        int64 `json:"received"`
	ReceivedUnacked int64 `json:"received_unacked"`
	// Lost were acknowledged and never received within the grace period.
	Lost int64 `json:"lost"`
	// Duplicated counts receipts after the first (by id); records in a realtime-db put of the
	// whole value (a connection's first event, a server's resync) do not count.
	Duplicated int64 `json:"duplicated"`
	// Mismatched arrived with content other than what was sent; Foreign are events for ids
	// this run did not send; Partial are events below a record (a field of it).
	Mismatched int64 `json:"mismatched"`
	Foreign    int64 `json:"foreign"`
	Partial    int64 `json:"partial"`
	// SnapshotRecords came in puts of the whole value; Resyncs are such puts after a
	// connection's first event (the server re-sent everything to a listener that fell behind).
	SnapshotRecords int64 `json:"snapshot_records"`
	Resyncs         int64 `json:"resyncs"`
	Reconnects      int64 `json:"reconnects"`
	// MaxLatencyMS is the largest end-to-end latency, unclamped (the HDR series clamp at 60 s).
	MaxLatencyMS float64 `json:"max_latency_ms"`
	// LastReceiptS is when the last record arrived, seconds from T0.
	LastReceiptS float64 `json:"last_receipt_s"`
	RecordsPerS  float64 `json:"records_per_s"`
	CPUCores     float64 `json:"cpu_cores"`
	Verify       *Verify `json:"verify,omitempty"`
}

// Verify is what the database held after the grace period.
type Verify struct {
	Records    int64  `json:"records"`    // records under the path
	Missing    int64  `json:"missing"`    // acknowledged, absent
	Mismatched int64  `json:"mismatched"` // present with other content
	Unexpected int64  `json:"unexpected"` // present, never sent by this run (or unparseable)
	Error      string `json:"error,omitempty"`
}

type errLost struct{}

func (errLost) Error() string     { return "acknowledged, never received" }
func (errLost) ErrorType() string { return "lost" }

type httpStatusError struct {
	code int
	body string
}

func (e *httpStatusError) Error() string     { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }
func (e *httpStatusError) ErrorType() string { return "http_" + strconv.Itoa(e.code) }

// subscriber receives records and hands each to deliver; it closes ready once it receives
// (the users start then) and returns when ctx ends.
type subscriber interface {
	run(ctx context.Context, ready chan<- struct{}, deliver func(id string, raw []byte, snapshot bool))
	reconnects() int64
	// resyncCount is how many times the server re-sent the whole value mid-stream.
	resyncCount() int64
}

// Run drives the users and the subscriber for cfg.Duration, waits up to cfg.Grace for records
// still on their way, writes the outputs and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	run := cfg.runID()
	t := newTally(cfg.Users, cfg.Requests)
	var sub subscriber
	if cfg.Subscribe == SubscribeKafka {
		sub = &kafkaSub{brokers: cfg.Brokers, topic: cfg.Topic, log: log}
	} else {
		sub = &sseSub{url: streamURL(cfg.SubscribeURL, cfg.Path, cfg.NS), log: log}
	}
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	ready := make(chan struct{})
	var subDone sync.WaitGroup
	var sess *loadgen.Session
	sessReady := make(chan struct{})
	subDone.Add(1)
	go func() {
		defer subDone.Done()
		sub.run(subCtx, ready, func(id string, raw []byte, snapshot bool) {
			<-sessReady
			if sess == nil {
				return // the session failed to start: Run is returning
			}
			deliver(t, sess, run, cfg.Payload, id, raw, snapshot)
		})
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		stopSub()
		subDone.Wait()
		return nil, fmt.Errorf("subscriber not ready: %w", ctx.Err())
	case <-time.After(cfg.Timeout):
		stopSub()
		subDone.Wait()
		return nil, fmt.Errorf("subscriber (%s) not ready within %v", cfg.Subscribe, cfg.Timeout)
	}
	if cfg.Send == SendBridge {
		err := waitHealthy(ctx, strings.TrimSuffix(cfg.SendURL, "/")+"/healthz", cfg.Timeout)
		if err == nil && cfg.SendTokenFile != "" {
			// Read once the bridge is up: it writes a generated token before it listens.
			cfg.sendToken, err = httpauth.ReadToken(cfg.SendTokenFile)
		}
		if err != nil {
			stopSub()
			close(sessReady)
			subDone.Wait()
			return nil, err
		}
	}
	cpu0 := procstat.SelfCPU().Seconds()
	sess, err := loadgen.NewSession(loadgen.Config{Duration: cfg.Duration, Warmup: cfg.Warmup, OutDir: cfg.OutDir,
		Progress: cfg.Progress}, []string{SeriesE2E, SeriesAck})
	if err != nil {
		stopSub()
		close(sessReady)
		subDone.Wait()
		return nil, err
	}
	close(sessReady)
	t0 := sess.T0()

	client := &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// One keep-alive connection per user at most, as the seed's user processes had.
		MaxIdleConns: cfg.Users, MaxIdleConnsPerHost: cfg.Users, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true,
	}}
	defer client.CloseIdleConnections()
	var users sync.WaitGroup
	for u := 0; u < cfg.Users; u++ {
		users.Add(1)
		go func() {
			defer users.Done()
			runUser(ctx, cfg, client, sess, t, run, u, t0)
		}()
	}
	users.Wait()
	sendEnd := time.Now()
	// Wait for acknowledged records still on their way, polling: the tally is the only
	// place that knows, and a scan of it is cheap next to the grace period.
	graceEnd := sendEnd.Add(cfg.Grace)
	for t.pending() && time.Now().Before(graceEnd) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	stopSub()
	subDone.Wait()
	elapsed := time.Since(t0)

	c := t.counts()
	for i := range t.sentUS {
		if t.acked[i].Load() && t.receipts[i].Load() == 0 {
			if op, ok := sess.BeginAt(SeriesE2E, time.UnixMicro(t.intendedUS[i].Load())); ok {
				op.End(errLost{})
			}
		}
	}
	rep := &Report{Run: run, Send: cfg.Send, Subscribe: cfg.Subscribe, Users: cfg.Users, Requests: cfg.Requests,
		Payload: cfg.Payload, IntervalMS: results.Millis(cfg.Interval), IntervalSDMS: results.Millis(cfg.IntervalSD), T0UnixUS: t0.UnixMicro(),
		Planned: int64(cfg.Users) * int64(cfg.Requests), Sent: c.Sent, Acked: c.Acked, Unacked: c.Unacked,
		Received: c.Received, ReceivedUnacked: c.ReceivedUnacked, Lost: c.Lost,
		Duplicated: t.duplicated.Load(), Mismatched: t.mismatched.Load(), Foreign: t.foreign.Load(),
		Partial: t.partial.Load(), SnapshotRecords: t.snapshot.Load(), Reconnects: sub.reconnects(), Resyncs: sub.resyncCount(),
		MaxLatencyMS: c.MaxLatencyMS, CPUCores: (procstat.SelfCPU().Seconds() - cpu0) / elapsed.Seconds()}
	rows := t.timeline(t0)
	for _, r := range rows {
		rep.LastReceiptS = max(rep.LastReceiptS, r.LastReceiptS)
	}
	if active := min(sendEnd.Sub(t0), cfg.Duration).Seconds(); active > 0 {
		rep.RecordsPerS = float64(c.Sent) / active
	}
	if cfg.Verify && ctx.Err() == nil {
		rep.Verify = verify(ctx, client, cfg, t, run)
	}
	res, err := sess.Close(ctx.Err() != nil)
	if err != nil {
		return rep, err
	}
	if cfg.OutDir != "" {
		if err := writeOutputs(cfg.OutDir, rep, rows, t, run, t0); err != nil {
			return rep, err
		}
	}
	if err := res.Failure(); err != nil {
		return rep, err
	}
	return rep, ctx.Err()
}

// waitHealthy waits until url answers 200: a stream bridge accepts posts once it reached
// Kafka, which may be after it started listening (when the runner saw it ready).
func waitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %v: %v", url, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runUser sends one user's records: due at a uniformly random offset within the first
// interval (users do not start in lockstep), then at Normal(Interval, IntervalSD) gaps clamped
// at 0. A user has one request outstanding at a time, like the seed's user processes: when an
// answer comes after the next record was due, that record goes at once and its latency still
// counts from when it was due.
func runUser(ctx context.Context, cfg Config, client *http.Client, sess *loadgen.Session, t *tally, run string, u int, t0 time.Time) {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(u)))
	due := t0.Add(time.Duration(rng.Float64() * float64(cfg.Interval)))
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for seq := 0; seq < cfg.Requests; seq++ {
		if seq > 0 {
			gap := float64(cfg.Interval) + rng.NormFloat64()*float64(cfg.IntervalSD)
			due = due.Add(time.Duration(math.Max(gap, 0)))
		}
		if due.Sub(t0) >= cfg.Duration {
			return
		}
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		i, _ := t.slot(u, seq)
		sent := time.Now()
		body, err := encodeRecord(run, u, seq, sent.UnixMicro(), cfg.Payload)
		if err != nil {
			return // Validate's minimum payload makes this unreachable
		}
		t.intendedUS[i].Store(due.UnixMicro())
		t.sentUS[i].Store(sent.UnixMicro())
		op, ok := sess.BeginAt(SeriesAck, due)
		err = send(ctx, client, cfg, recordID(run, u, seq), body)
		if ok {
			op.End(err)
		}
		if err == nil {
			t.acked[i].Store(true)
		}
	}
}

// send delivers one record and waits for its acknowledgement.
func send(ctx context.Context, client *http.Client, cfg Config, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var req *http.Request
	var err error
	if cfg.Send == SendBridge {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost,
			strings.TrimSuffix(cfg.SendURL, "/")+"/topics/"+url.PathEscape(cfg.Topic), bytes.NewReader(body))
	} else {
		// print=silent: the server answers 204 without echoing the record back, which would
		// double the traffic over the WAN for nothing the experiment reads.
		u := strings.TrimSuffix(cfg.SendURL, "/") + joinPath(cfg.Path, id) + ".json?print=silent&ns=" + url.QueryEscape(cfg.NS)
		req, err = http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	}
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.sendToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.sendToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &httpStatusError{code: resp.StatusCode, body: strings.TrimSpace(string(msg))}
	}
	_, err = io.Copy(io.Discard, resp.Body) // drain, so the connection is reused
	return err
}

func joinPath(path, id string) string {
	if path == "/" {
		return "/" + id
	}
	return path + "/" + id
}

func streamURL(base, path, ns string) string {
	p := path
	if p == "/" {
		p = ""
	}
	return strings.TrimSuffix(base, "/") + p + ".json?ns=" + url.QueryEscape(ns)
}

// deliver accounts for one received record.
func deliver(t *tally, sess *loadgen.Session, run string, payload int, id string, raw []byte, snapshot bool) {
	now := time.Now()
	if id == "" && raw == nil {
		t.partial.Add(1)
		return
	}
	user, seq, ok := parseID(run, id)
	i, inRange := t.slot(user, seq)
	if !ok || !inRange || t.sentUS[i].Load() == 0 {
		t.foreign.Add(1)
		return
	}
	if snapshot {
		t.snapshot.Add(1)
	}
	if n := t.receipts[i].Add(1); n > 1 {
		if !snapshot {
			t.duplicated.Add(1)
		}
		return
	}
	t.receivedUS[i].Store(now.UnixMicro())
	r, err := decodeRecord(raw)
	if err != nil || !checkRecord(r, run, user, seq, t.sentUS[i].Load(), payload) {
		t.mismatched.Add(1)
	}
	if op, ok := sess.BeginAt(SeriesE2E, time.UnixMicro(t.intendedUS[i].Load())); ok {
		op.End(nil)
	}
}

func writeOutputs(dir string, rep *Report, rows []timelineRow, t *tally, run string, t0 time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := results.WriteJSON(filepath.Join(dir, ReportFile), rep); err != nil {
		return err
	}
	var tl bytes.Buffer
	tl.WriteString(strings.Join(TimelineHeader, ",") + "\n")
	for s, r := range rows {
		fmt.Fprintf(&tl, "%d,%d,%d,%d,%d,%s\n", s, r.Sent, r.Acked, r.Received, r.Lost,
			strconv.FormatFloat(r.LastReceiptS, 'f', 6, 64))
	}
	if err := os.WriteFile(filepath.Join(dir, TimelineFile), tl.Bytes(), 0o644); err != nil {
		return err
	}
	return writeRecords(filepath.Join(dir, RecordsFile), t, run, t0)
}

// writeRecords writes one row per record sent: id, due time (s from t0), latency (ms, empty
// when never received), acknowledged, receipts.
func writeRecords(path string, t *tally, run string, t0 time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	var b []byte
	b = append(b, "id,due_s,latency_ms,acked,receipts\n"...)
	t0us := t0.UnixMicro()
	for i := range t.sentUS {
		if t.sentUS[i].Load() == 0 {
			continue
		}
		due := t.intendedUS[i].Load()
		b = append(b, recordID(run, i/t.requests, i%t.requests)...)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(due-t0us)/1e6, 'f', 6, 64)
		b = append(b, ',')
		if rcv := t.receivedUS[i].Load(); rcv != 0 {
			b = strconv.AppendFloat(b, float64(rcv-due)/1000, 'f', 3, 64)
		}
		b = append(b, ',')
		b = strconv.AppendBool(b, t.acked[i].Load())
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(t.receipts[i].Load()), 10)
		b = append(b, '\n')
		if len(b) > 1<<16 {
			if _, err := zw.Write(b); err != nil {
				f.Close()
				return err
			}
			b = b[:0]
		}
	}
	_, err = zw.Write(b)
	err = errors.Join(err, zw.Close())
	return errors.Join(err, f.Close())
}
