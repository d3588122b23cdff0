package streamload

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Ways of sending and subscribing.
const (
	SendREST   = "rest"   // PUT <url><path>/<id>.json?ns=<ns> to a realtime database
	SendBridge = "bridge" // POST <url>/topics/<topic> to a stream bridge

	SubscribeSSE   = "sse"   // Firebase REST streaming of <url><path>.json?ns=<ns>
	SubscribeKafka = "kafka" // a Kafka consumer of <topic> at <brokers>
)

// Config is one experiment run of the users and their subscriber.
type Config struct {
	// Send is how users send: SendREST or SendBridge; SendURL is the server's base URL
	// (http://host:port).
	Send, SendURL string
	// SendTokenFile holds the bridge's token, sent as Authorization: Bearer TOKEN with each
	// post (SendBridge; empty: none, for a bridge run with --auth=false).
	SendTokenFile string
	sendToken     string // read from SendTokenFile by Run
	// Subscribe is how the subscriber receives: SubscribeSSE (SubscribeURL is the realtime
	// database's base URL) or SubscribeKafka (Brokers are its bootstrap servers).
	Subscribe, SubscribeURL string
	Brokers                 []string
	// Path is the realtime-db location records are written under (REST) and listened to
	// (SSE): a record lives at <Path>/<id>. NS is the database (?ns=). Topic is the Kafka
	// topic (bridge, Kafka subscriber).
	Path, NS, Topic string
	// Users send Requests records each; the gaps between a user's records are
	// Normal(Interval, IntervalSD) clamped at 0. Payload is the size of each record's JSON.
	Users, Requests      int
	Interval, IntervalSD time.Duration
	Payload              int
	// Timeout bounds one send; Grace is how long the subscriber waits, after the last send,
	// for acknowledged records still on their way. Records acknowledged but not received by
	// then are lost.
	Timeout, Grace time.Duration
	// Verify reads the subscribed realtime-db path after the grace period and checks that it
	// holds every acknowledged record once, with the content sent (SSE only).
	Verify bool
	// Run prefixes every record id (default r<seed>): runs never collide in one database.
	Run              string
	Duration, Warmup time.Duration
	Seed             int64
	OutDir           string
	Progress         io.Writer
}

// DefaultConfig is the seed's user (1000 records, one a second on average, 1 KB) with a
// standard deviation of 0.1 s and a quick run's count of users.
func DefaultConfig() Config {
	return Config{Send: SendREST, Subscribe: SubscribeSSE, Path: "/records", NS: "default", Topic: "records",
		Users: 100, Requests: 1000, Interval: time.Second, IntervalSD: 100 * time.Millisecond, Payload: 1024,
		Timeout: 30 * time.Second, Grace: 30 * time.Second, Duration: 1010 * time.Second, Seed: 1}
}

// Validate checks the config, naming the field at fault and what is allowed.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Send {
	case SendREST, SendBridge:
	default:
		bad("send %q: must be %s (PUT to a realtime-db) or %s (POST to a stream-bridge)", c.Send, SendREST, SendBridge)
	}
	if err := checkURL(c.SendURL); err != nil {
		bad("send url: %v", err)
	}
	switch c.Subscribe {
	case SubscribeSSE:
		if err := checkURL(c.SubscribeURL); err != nil {
			bad("subscribe url: %v", err)
		}
	case SubscribeKafka:
		if len(c.Brokers) == 0 {
			bad("brokers: at least one host:port is required with subscribe %s", SubscribeKafka)
		}
		if c.Verify {
			bad("verify: only with subscribe %s (it reads the realtime-db path)", SubscribeSSE)
		}
	default:
		bad("subscribe %q: must be %s (a realtime-db listener) or %s (a Kafka consumer)", c.Subscribe, SubscribeSSE, SubscribeKafka)
	}
	if !strings.HasPrefix(c.Path, "/") || strings.HasSuffix(c.Path, "/") && c.Path != "/" || strings.ContainsAny(c.Path, ".$#[]") {
		bad("path %q: must start with /, not end with / (but the root), and not contain . $ # [ ]", c.Path)
	}
	if (c.Send == SendBridge || c.Subscribe == SubscribeKafka) && (c.Topic == "" || strings.ContainsAny(c.Topic, "/ ")) {
		bad("topic %q: a Kafka topic name is required (no / or spaces)", c.Topic)
	}
	if c.Users < 1 || c.Users > 100000 {
		bad("users %d: must be between 1 and 100000", c.Users)
	}
	if c.Requests < 1 || c.Requests > 10000000 {
		bad("requests %d: must be between 1 and 10000000 per user", c.Requests)
	}
	if int64(c.Users)*int64(c.Requests) > 50000000 {
		bad("users x requests = %d: at most 50000000 records per run", int64(c.Users)*int64(c.Requests))
	}
	if c.Interval < 0 || c.IntervalSD < 0 {
		bad("interval %v, interval sd %v: must be >= 0", c.Interval, c.IntervalSD)
	}
	if c.Payload < MinPayload || c.Payload > 16<<20 {
		bad("payload %d bytes: must be between %d and %d (16 MiB)", c.Payload, MinPayload, 16<<20)
	}
	if c.Timeout <= 0 || c.Grace < 0 {
		bad("timeout %v must be > 0 and grace %v >= 0", c.Timeout, c.Grace)
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.Warmup >= c.Duration {
		bad("duration %v, warmup %v: want duration > 0 and 0 <= warmup < duration", c.Duration, c.Warmup)
	}
	if c.Run != "" && strings.ContainsAny(c.Run, ".$#[]/ ") {
		bad("run %q: must not contain . $ # [ ] / or spaces (it is part of database keys)", c.Run)
	}
	return errors.Join(errs...)
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q: want http://host:port", s)
	}
	return nil
}

func (c Config) runID() string {
	if c.Run != "" {
		return c.Run
	}
	return fmt.Sprintf("r%d", c.Seed)
}
