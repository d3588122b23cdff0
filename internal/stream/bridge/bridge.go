package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/httpjson"
)

// Server is the bridge: an http.Handler producing to Kafka, safe for concurrent use.
type Server struct {
	cfg Config
	cl  *kgo.Client
	log *slog.Logger

	// connected is set once a broker answered; down holds the last transport error while
	// Kafka is believed unreachable (posts are answered 503 at once), nil otherwise.
	connected atomic.Bool
	down      atomic.Pointer[error]
	// wake is closed (and replaced) when Kafka is found down, so that posts waiting for
	// acknowledgements answer 503 then rather than at their timeout. Guarded by mu, read and
	// replaced under it, so no waiter misses a close.
	mu   sync.Mutex
	wake chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup // the prober
}

// New creates the producer (connecting lazily) and starts a prober that watches the brokers.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), wake: make(chan struct{})}
	cl, err := kgo.NewClient(append(cfg.clientOpts(), kgo.WithHooks(dialHook{s}))...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	s.cl = cl
	s.wg.Add(1)
	go s.probe()
	return s, nil
}

// Close stops the prober, waits for records in flight (up to AckTimeout) and closes the client.
func (s *Server) Close() {
	close(s.stop)
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AckTimeout)
	defer cancel()
	_ = s.cl.Flush(ctx)
	s.cl.Close()
}

// probe pings the brokers: until the first answer (healthz), and while Kafka is believed
// down, every 250 ms, so that the bridge accepts posts again as soon as a broker answers.
func (s *Server) probe() {
	defer s.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if !s.connected.Load() || s.down.Load() != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := s.cl.Ping(ctx)
			cancel()
			if err == nil {
				if !s.connected.Swap(true) {
					s.log.Info("connected to kafka", "brokers", strings.Join(s.cfg.Brokers, ","))
				}
				if s.down.Swap(nil) != nil {
					s.log.Info("kafka reachable again")
				}
			}
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// markDown records that Kafka failed to acknowledge for a reason other than the post itself,
// or that a broker could not be dialled, and wakes the posts waiting for acknowledgements.
func (s *Server) markDown(err error) {
	if s.down.Swap(&err) == nil {
		s.log.Warn("kafka unavailable; answering 503 until a broker answers", "err", err)
	}
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// woken is closed when Kafka is next found down.
func (s *Server) woken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// dialHook marks Kafka down when a broker cannot be dialled: a broker that was killed refuses
// connections at once, and posts should hear so then, not at their timeout. With a cluster a
// dead broker marks the bridge down only until the prober's next ping (250 ms) succeeds
// through another.
type dialHook struct{ s *Server }

func (h dialHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.s.markDown(fmt.Errorf("dial broker %s:%d: %w", meta.Host, meta.Port, err))
	}
}

// Offset is where one record was written.
type Offset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

type produceReply struct {
	Offsets []Offset `json:"offsets"`
}

// ServeHTTP serves POST /topics/<topic> and GET /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		if !s.connected.Load() {
			httpjson.Errorf(w, http.StatusServiceUnavailable, "not connected to kafka (%s) yet", strings.Join(s.cfg.Brokers, ","))
			return
		}
		if e := s.down.Load(); e != nil {
			httpjson.Errorf(w, http.StatusServiceUnavailable, "kafka unavailable: %v", *e)
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]string{"status": "ok"})
	case strings.HasPrefix(r.URL.Path, "/topics/"):
		if s.cfg.Token != "" && !httpauth.HasBearer(r, s.cfg.Token) {
			// Before anything else is looked at: a caller without the token learns nothing
			// about topics or input, and nothing reaches Kafka.
			httpauth.Unauthorized(w, "continuum stream-bridge")
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			httpjson.Errorf(w, http.StatusMethodNotAllowed, "method %s: only POST is allowed on /topics/<topic>", r.Method)
			return
		}
		s.produce(w, r, strings.TrimPrefix(r.URL.Path, "/topics/"))
	default:
		httpjson.Errorf(w, http.StatusNotFound, "no such endpoint %q: POST /topics/<topic> or GET /healthz", r.URL.Path)
	}
}

// ValidTopic checks a Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func ValidTopic(t string) error {
	if t == "" || len(t) > 249 || t == "." || t == ".." ||
		strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return fmt.Errorf("topic %q: want 1-249 of [a-zA-Z0-9._-] (not . or ..)", t)
	}
	return nil
}

// recordOverhead is an upper bound on what a record adds to a batch beyond its key and value
// (varint lengths, attributes, deltas, headers count).
const recordOverhead = 64

func (s *Server) produce(w http.ResponseWriter, r *http.Request, topic string) {
	if err := ValidTopic(topic); err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			httpjson.Errorf(w, http.StatusRequestEntityTooLarge, "body over %d bytes (--max-body-bytes)", s.cfg.MaxBodyBytes)
			return
		}
		httpjson.Errorf(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	entries, err := parseBody(body, s.cfg.KeyField)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	// A batch holds at least one record, so a record over the batch bound can never be sent.
	for i, e := range entries {
		if n := len(e.key) + len(e.value) + recordOverhead; n > int(s.cfg.BatchMaxBytes) {
			httpjson.Errorf(w, http.StatusBadRequest, "record %d is %d bytes with its key: over the %d-byte batch limit (--batch-max-bytes)", i, n, s.cfg.BatchMaxBytes)
			return
		}
	}

	// Bad input is refused as such whether or not Kafka is up; a good post while Kafka is
	// believed down is refused at once. wake is taken first: Kafka found down after the check
	// closes it.
	wake := s.woken()
	if s.down.Load() != nil {
		s.unavailable(w)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.AckTimeout)
	defer cancel()
	// results is buffered for every record: callbacks that complete after this post gave up
	// never block the client's producer goroutines.
	type result struct {
		i   int
		off Offset
		err error
	}
	results := make(chan result, len(entries))
	for i, e := range entries {
		rec := &kgo.Record{Topic: topic, Key: e.key, Value: e.value}
		s.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			results <- result{i, Offset{rec.Partition, rec.Offset}, err}
		})
	}
	offs := make([]Offset, len(entries))
	for range entries {
		select {
		case res := <-results:
			if res.err != nil {
				s.fail(w, topic, res.i, res.err)
				return
			}
			offs[res.i] = res.off
		case <-wake:
			s.unavailable(w)
			return
		case <-ctx.Done():
			if r.Context().Err() == nil {
				s.markDown(fmt.Errorf("no acknowledgement within %v", s.cfg.AckTimeout))
			}
			httpjson.Errorf(w, http.StatusServiceUnavailable, "kafka did not acknowledge within %v (--ack-timeout); nothing in this post is acknowledged: retry it", s.cfg.AckTimeout)
			return
		}
	}
	s.connected.Store(true)
	httpjson.Write(w, http.StatusOK, produceReply{Offsets: offs})
}

// unavailable answers a post while Kafka is believed down.
func (s *Server) unavailable(w http.ResponseWriter) {
	why := "down"
	if e := s.down.Load(); e != nil {
		why = (*e).Error()
	}
	httpjson.Errorf(w, http.StatusServiceUnavailable, "kafka unavailable: %s; nothing in this post is acknowledged: retry it", why)
}

// fail answers a post one of whose records Kafka did not take.
func (s *Server) fail(w http.ResponseWriter, topic string, i int, err error) {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		httpjson.Errorf(w, http.StatusNotFound, "topic %q does not exist in kafka: create it (continuum kafka-topics create)", topic)
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		httpjson.Errorf(w, http.StatusBadRequest, "record %d is too large for the broker: %v", i, err)
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.TopicAuthorizationFailed):
		httpjson.Errorf(w, http.StatusBadRequest, "topic %q: %v", topic, err)
	case errors.Is(err, context.Canceled):
		httpjson.Errorf(w, http.StatusServiceUnavailable, "the post was cancelled before kafka acknowledged it")
	default:
		s.markDown(err)
		httpjson.Errorf(w, http.StatusServiceUnavailable, "kafka did not acknowledge record %d: %v; nothing in this post is acknowledged: retry it", i, err)
	}
}

// Run serves cfg.ListenAddr until ctx ends, then drains posts in flight.
func Run(ctx context.Context, cfg Config) error {
	if err := httpauth.CheckExposure("stream-bridge listen", cfg.ListenAddr, cfg.Token != "", "give the bridge a token (--token-file, on by default)"); err != nil {
		return err
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("stream-bridge listening", "addr", ln.Addr().String(), "brokers", strings.Join(cfg.Brokers, ","),
		"linger", cfg.Linger.String(), "acks", cfg.Acks, "idempotent", strconv.FormatBool(cfg.Idempotent), "token", strconv.FormatBool(cfg.Token != ""))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.AckTimeout+time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}
