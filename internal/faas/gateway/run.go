package gateway

import (
	"context"
	"crypto/tls"
	"encoding/csv"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/continuum-project/continuum/internal/results"
)

// RunConfig is a gateway process: the gateway, where it listens, and where its record of
// instances over time goes.
type RunConfig struct {
	Gateway Config
	Listen  string
	// OutDir, if set, receives replicas.csv (every tick: each function's wanted and ready
	// instances and requests under way), scaling.csv (every change of the wanted instances,
	// with its reason) and gateway.json (per function: invocations, cold starts, scale events,
	// the most and the mean ready instances).
	OutDir string
	// TLSCert and TLSKey, both set, serve HTTPS instead of plain HTTP (PEM files, as
	// http.Server.ServeTLS reads them; a chain goes in the certificate file, leaf first).
	TLSCert, TLSKey string
}

// Output files.
const (
	ReplicasFile = "replicas.csv"
	ScalingFile  = "scaling.csv"
	ReportFile   = "gateway.json"
)

// FunctionReport is one function's entry in gateway.json.
type FunctionReport struct {
	Invocations  int64   `json:"invocations"`
	ColdStarts   int64   `json:"cold_starts"`
	ScaleEvents  int64   `json:"scale_events"`
	MaxReady     int     `json:"max_ready"`
	MeanReady    float64 `json:"mean_ready"`
	FinalWanted  int     `json:"final_wanted"`
	ReadySamples int     `json:"ready_samples"`
}

// Run starts the gateway, serves until ctx ends, then stops every instance and writes the
// outputs.
func Run(ctx context.Context, cfg RunConfig, ready func(net.Addr)) error {
	t0 := time.Now()
	var mu sync.Mutex
	var events [][]string
	onScale := cfg.Gateway.OnScale
	cfg.Gateway.OnScale = func(e ScaleEvent) {
		mu.Lock()
		events = append(events, []string{secs(e.At.Sub(t0)), e.Function, strconv.Itoa(e.From), strconv.Itoa(e.To), e.Reason})
		mu.Unlock()
		if onScale != nil {
			onScale(e)
		}
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return fmt.Errorf("tls: give both --tls-cert and --tls-key, or neither (plain HTTP)")
	}
	var tlsCert tls.Certificate
	if cfg.TLSCert != "" {
		// Loaded before anything starts, so a bad pair fails the start with its reason.
		var err error
		if tlsCert, err = tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
	}
	g, err := New(ctx, cfg.Gateway)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		g.Close()
		return fmt.Errorf("gateway listen %s: %w", cfg.Listen, err)
	}
	srv := NewServer(g.Handler())
	if cfg.TLSCert != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{tlsCert}}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	go func() { _ = srv.Serve(ln) }()

	reports := map[string]*FunctionReport{}
	var samples [][]string
	tick := time.NewTicker(g.cfg.Tick)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		at := secs(time.Since(t0))
		for _, s := range g.Status() {
			samples = append(samples, []string{at, s.Name, strconv.Itoa(s.Replicas), strconv.Itoa(s.AvailableReplicas), strconv.FormatInt(s.Inflight, 10)})
			r := reports[s.Name]
			if r == nil {
				r = &FunctionReport{}
				reports[s.Name] = r
			}
			r.MaxReady = max(r.MaxReady, s.AvailableReplicas)
			r.MeanReady += float64(s.AvailableReplicas)
			r.ReadySamples++
			r.Invocations, r.ColdStarts, r.ScaleEvents, r.FinalWanted = s.InvocationCount, s.ColdStarts, s.ScaleEvents, s.Replicas
		}
	}
	tick.Stop()
	// The server stops taking connections while the gateway drains: both are bounded by the
	// shutdown grace (Close fails what is still under way past it, so the handlers the server
	// waits for return), the server's wait with a margin for those last 503s.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		g.Close()
	}()
	sctx, cancel := context.WithTimeout(context.Background(), g.cfg.ShutdownGrace+abortWriteGrace+5*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()
	<-closed
	if cfg.OutDir == "" {
		return nil
	}
	for _, r := range reports {
		if r.ReadySamples > 0 {
			r.MeanReady /= float64(r.ReadySamples)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if err := writeCSV(filepath.Join(cfg.OutDir, ReplicasFile), []string{"t_s", "function", "wanted", "ready", "inflight"}, samples); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(cfg.OutDir, ScalingFile), []string{"t_s", "function", "from", "to", "reason"}, events); err != nil {
		return err
	}
	return results.WriteJSON(filepath.Join(cfg.OutDir, ReportFile), reports)
}

// NewServer is the gateway's http.Server for h, with the limits a server facing other
// machines needs: a client that dribbles its header is cut after ReadHeaderTimeout (slowloris),
// headers are bounded (431 past MaxHeaderBytes), and idle keep-alive connections are closed.
// Bodies are not bounded here: each function's instances bound theirs (413).
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: MaxHeaderBytes,
		IdleTimeout: 2 * time.Minute}
}

// MaxHeaderBytes bounds a request's header at the gateway (net/http's default, said here so
// tests and docs can name it).
const MaxHeaderBytes = 1 << 20

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

func writeCSV(path string, header []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
