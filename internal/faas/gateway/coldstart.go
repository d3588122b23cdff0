package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"time"

	"github.com/continuum-project/continuum/internal/faas"
)

// ColdStartConfig is `continuum bench coldstart`: how long a function at zero instances takes
// to answer its first request, with a fresh interpreter per instance and with a zygote.
type ColdStartConfig struct {
	Python   faas.Python
	Handlers []string // function folders (absolute)
	Runs     int      // cold starts per handler and variant (default 20)
	// Bodies are the requests' bodies by handler folder (default: empty).
	Bodies map[string][]byte
}

// ColdStartResult is one handler and variant.
type ColdStartResult struct {
	Handler string    `json:"handler"`
	Variant string    `json:"variant"` // "fresh interpreter" or "zygote"
	MS      []float64 `json:"ms"`      // every cold start, request to answer
	P50     float64   `json:"p50_ms"`
	P90     float64   `json:"p90_ms"`
	Max     float64   `json:"max_ms"`
	WarmP50 float64   `json:"warm_p50_ms"` // the next request, to the instance just started
}

// ColdStart measures each handler under both variants, alternating them run by run so a
// change of the machine's load hits both alike.
func ColdStart(ctx context.Context, cfg ColdStartConfig) ([]ColdStartResult, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 20
	}
	var out []ColdStartResult
	for _, h := range cfg.Handlers {
		var gws [2]*Gateway
		var urls [2]string
		for i, zygote := range []bool{false, true} {
			f := &Function{Name: "f", Handler: h, Mode: faas.ModeHTTP, Server: faas.ServerContinuum, Zygote: zygote, IdleTimeout: time.Hour}
			g, err := New(ctx, Config{Functions: []*Function{f}, Provider: &LocalProvider{Python: cfg.Python}})
			if err != nil {
				return nil, err
			}
			defer g.Close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			srv := &http.Server{Handler: g.Handler()}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			gws[i], urls[i] = g, "http://"+ln.Addr().String()+"/function/f"
		}
		res := [2]ColdStartResult{{Handler: filepath.Base(h), Variant: "fresh interpreter"}, {Handler: filepath.Base(h), Variant: "zygote"}}
		var warm [2][]float64
		client := &http.Client{Timeout: time.Minute}
		for run := 0; run < cfg.Runs; run++ {
			for k := 0; k < 2; k++ {
				i := (run + k) % 2 // alternate which goes first
				if err := toZero(ctx, gws[i]); err != nil {
					return nil, err
				}
				cold, err := timeRequest(client, urls[i], cfg.Bodies[h])
				if err != nil {
					return nil, err
				}
				w, err := timeRequest(client, urls[i], cfg.Bodies[h])
				if err != nil {
					return nil, err
				}
				res[i].MS = append(res[i].MS, ms(cold))
				warm[i] = append(warm[i], ms(w))
			}
		}
		for i := range res {
			s := append([]float64(nil), res[i].MS...)
			sort.Float64s(s)
			res[i].P50, res[i].P90, res[i].Max = quantile(s, 0.5), quantile(s, 0.9), s[len(s)-1]
			sort.Float64s(warm[i])
			res[i].WarmP50 = quantile(warm[i], 0.5)
			out = append(out, res[i])
		}
	}
	return out, nil
}

// toZero scales the function to zero and waits until its instance is gone.
func toZero(ctx context.Context, g *Gateway) error {
	if err := g.Scale("f", 0, "bench"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s := g.Status()[0]
		if s.AvailableReplicas == 0 && s.Draining == 0 && s.Starting == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("function not at zero instances after a minute: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func timeRequest(c *http.Client, url string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return time.Since(start), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile of sorted values (nearest rank).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
