package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is the bridge's configuration.
type Config struct {
	ListenAddr string   // host:port to serve on (default ":8090")
	Brokers    []string // Kafka bootstrap servers, host:port (required)
	// KeyField names the field of each object whose value (a string or a number) is the record
	// key (default "id").
	KeyField string
	// MaxBodyBytes bounds one post's body (default 8 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// Linger is how long the producer waits to fill a batch before sending it. The default is 0:
	// the bridge is on the latency path (a user's post waits for the ack), and under load batches
	// fill anyway from the records that arrive while a request is in flight. Kafka 4's Java
	// producer defaults to 5 ms (KIP-1030), which favours throughput.
	Linger time.Duration
	// BatchMaxBytes bounds one partition's batch, hence one record (default 1 MiB, Kafka's
	// max.message.bytes). Larger records are refused with 400.
	BatchMaxBytes int32
	// Compression of batches: none, gzip, snappy, lz4 or zstd (default none).
	Compression string
	// Acks is all (default), leader or none; Idempotent (default true) needs all.
	Acks       string
	Idempotent bool
	// AckTimeout bounds how long a post waits for Kafka's acknowledgement before it is answered
	// 503 (default 10 s; a broker that is known to be down gets 503 at once).
	AckTimeout time.Duration
	// MaxBufferedRecords bounds the records waiting for their ack across all posts (default
	// 100000); a post that finds the buffer full waits, within AckTimeout.
	MaxBufferedRecords int
	// Token is the bearer token POST /topics/ requires (Authorization: Bearer TOKEN), compared
	// in constant time; GET /healthz stays open. Empty: posts need none, which Run allows only
	// on a loopback ListenAddr, so that nobody else can post into Kafka uninvited.
	Token  string
	Logger *slog.Logger // default slog.Default()
}

// DefaultConfig is the latency path's configuration: linger 0, acks=all, idempotent.
func DefaultConfig() Config {
	return Config{
		ListenAddr: ":8090", KeyField: "id", MaxBodyBytes: 8 << 20, BatchMaxBytes: 1 << 20,
		Compression: "none", Acks: "all", Idempotent: true, AckTimeout: 10 * time.Second,
		MaxBufferedRecords: 100000,
	}
}

// Validate checks the configuration; every problem is named with what is allowed.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: want host:port, e.g. :8090", c.ListenAddr))
	}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: at least one Kafka bootstrap server (host:port) is required"))
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("brokers: %q: want host:port", b))
		}
	}
	if c.KeyField == "" {
		errs = append(errs, errors.New("key field: must not be empty"))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max body bytes %d: must be > 0", c.MaxBodyBytes))
	}
	if c.Linger < 0 {
		errs = append(errs, fmt.Errorf("linger %v: must be >= 0", c.Linger))
	}
	if c.BatchMaxBytes < 1024 {
		errs = append(errs, fmt.Errorf("batch max bytes %d: must be >= 1024", c.BatchMaxBytes))
	}
	if _, err := compression(c.Compression); err != nil {
		errs = append(errs, err)
	}
	if _, err := acks(c.Acks); err != nil {
		errs = append(errs, err)
	}
	if c.Idempotent && c.Acks != "all" {
		errs = append(errs, fmt.Errorf("idempotent producer needs acks all, not %q (or turn idempotence off)", c.Acks))
	}
	if c.AckTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ack timeout %v: must be > 0", c.AckTimeout))
	}
	if c.MaxBufferedRecords < 1 {
		errs = append(errs, fmt.Errorf("max buffered records %d: must be >= 1", c.MaxBufferedRecords))
	}
	return errors.Join(errs...)
}

// Compressions are the allowed values of Config.Compression.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// AckModes are the allowed values of Config.Acks.
var AckModes = []string{"all", "leader", "none"}

func compression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("compression %q: want one of %s", s, strings.Join(Compressions, ", "))
}

func acks(s string) (kgo.Acks, error) {
	switch s {
	case "all":
		return kgo.AllISRAcks(), nil
	case "leader":
		return kgo.LeaderAck(), nil
	case "none":
		return kgo.NoAck(), nil
	}
	return kgo.AllISRAcks(), fmt.Errorf("acks %q: want all, leader or none", s)
}

// clientOpts are the franz-go options of cfg (validated).
func (c Config) clientOpts() []kgo.Opt {
	comp, _ := compression(c.Compression)
	ack, _ := acks(c.Acks)
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.RequiredAcks(ack),
		kgo.ProducerLinger(c.Linger),
		kgo.ProducerBatchMaxBytes(c.BatchMaxBytes),
		kgo.ProducerBatchCompression(comp),
		kgo.MaxBufferedRecords(c.MaxBufferedRecords),
		// A record still unsent when its post gave up is failed rather than kept: the client
		// was told 503 and will post it again.
		kgo.RecordDeliveryTimeout(c.AckTimeout),
		// Dial failures surface quickly, so a down broker is noticed within a post's timeout.
		kgo.DialTimeout(2 * time.Second),
	}
	if !c.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}
