package faasbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/faas"
	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/results"
)

// ColdStartConfig is `continuum bench coldstart`: how long a function at zero instances takes
// to answer its first request, with a fresh interpreter per instance and with a zygote.
type ColdStartConfig struct {
	Python   faas.Python `json:"-"`
	Handlers []string    `json:"handlers"` // function folders (absolute)
	Runs     int         `json:"runs"`     // cold starts per handler and variant (default 20)
	// Bodies are the requests' bodies by handler folder (default: empty).
	Bodies map[string][]byte `json:"-"`
	// Command is the command line that regenerates the result, for its header.
	Command string `json:"-"`
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

// ColdStartReport is the whole cold-start benchmark.
type ColdStartReport struct {
	benchkit.Header
	Runs    int               `json:"runs"`
	Results []ColdStartResult `json:"results"`
	Goals   []benchkit.Goal   `json:"goals"`
}

// ColdStart measures each handler under both variants, alternating them run by run so a
// change of the machine's load hits both alike.
func ColdStart(ctx context.Context, cfg ColdStartConfig) (*ColdStartReport, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 20
	}
	rep := &ColdStartReport{Header: benchkit.Start(cfg.Command), Runs: cfg.Runs}
	for _, h := range cfg.Handlers {
		res, err := coldStartHandler(ctx, cfg, h)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res[:]...)
		rep.SampleLoad()
	}
	rep.Finish()
	rep.Goals = ColdStartGoals(rep.Results)
	return rep, nil
}

func coldStartHandler(ctx context.Context, cfg ColdStartConfig, h string) ([2]ColdStartResult, error) {
	var gws [2]*gateway.Gateway
	var urls [2]string
	for i, zygote := range []bool{false, true} {
		f := &gateway.Function{Name: "f", Handler: h, Mode: faas.ModeHTTP, Server: faas.ServerContinuum, Zygote: zygote, IdleTimeout: time.Hour}
		g, err := gateway.New(ctx, gateway.Config{Functions: []*gateway.Function{f}, Provider: &gateway.LocalProvider{Python: cfg.Python}})
		if err != nil {
			return [2]ColdStartResult{}, err
		}
		defer g.Close()
		url, stop, err := serve(g.Handler())
		if err != nil {
			return [2]ColdStartResult{}, err
		}
		defer stop()
		gws[i], urls[i] = g, url+"/function/f"
	}
	res := [2]ColdStartResult{{Handler: filepath.Base(h), Variant: "fresh interpreter"}, {Handler: filepath.Base(h), Variant: "zygote"}}
	var warm [2][]float64
	client := &http.Client{Timeout: time.Minute}
	for run := 0; run < cfg.Runs; run++ {
		for _, i := range benchkit.Order(run, 2) {
			if err := toZero(ctx, gws[i]); err != nil {
				return res, err
			}
			cold, err := timeRequest(client, urls[i], cfg.Bodies[h])
			if err != nil {
				return res, err
			}
			w, err := timeRequest(client, urls[i], cfg.Bodies[h])
			if err != nil {
				return res, err
			}
			res[i].MS = append(res[i].MS, results.Millis(cold))
			warm[i] = append(warm[i], results.Millis(w))
		}
	}
	for i := range res {
		s := benchkit.Summarize(res[i].MS)
		res[i].P50, res[i].P90, res[i].Max = benchkit.NearestRank(res[i].MS, 0.5), benchkit.NearestRank(res[i].MS, 0.9), s.Max
		res[i].WarmP50 = benchkit.NearestRank(warm[i], 0.5)
	}
	return res, nil
}

// toZero scales the function to zero and waits until its instance is gone.
func toZero(ctx context.Context, g *gateway.Gateway) error {
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

// coldGoalMs is the goal for a handler's cold p50: 50 ms for a trivial handler, 100 ms
// for the pandas one (iot-analytics).
func coldGoalMs(handler string) float64 {
	if strings.Contains(handler, "analytics") {
		return 100
	}
	return 50
}

// ColdStartGoals judges every handler and variant's cold p50 against the goal.
func ColdStartGoals(results []ColdStartResult) []benchkit.Goal {
	var gs []benchkit.Goal
	for _, r := range results {
		goal := coldGoalMs(r.Handler)
		gs = append(gs, benchkit.Check(fmt.Sprintf("%s, %s: cold p50 ≤ %.0f ms", r.Handler, r.Variant, goal), r.P50 <= goal,
			fmt.Sprintf("%.1f ms (p90 %.1f ms, max %.1f ms)", r.P50, r.P90, r.Max)))
	}
	return gs
}

// ColdStartMarkdown renders the benchmark for docs/benchmarks/coldstart.md.
func ColdStartMarkdown(rep *ColdStartReport) string {
	d := benchkit.NewDoc("Function cold start: fresh interpreter vs zygote", rep.Header)
	d.Para("A run scales the function to zero, then times its first request (the gateway starts an instance: watchdog + upstream, which forks from the zygote or starts a new interpreter that imports the handler) and the next one (warm). Times are request to answer, in ms, %d runs per row, variants alternating.", rep.Runs)
	t := benchkit.NewTable("llrrrrl", "handler", "variant", "cold p50", "cold p90", "cold max", "warm p50", "goal (cold p50)")
	for _, r := range rep.Results {
		t.Row(r.Handler, r.Variant, fmt.Sprintf("%.1f", r.P50), fmt.Sprintf("%.1f", r.P90), fmt.Sprintf("%.1f", r.Max), fmt.Sprintf("%.2f", r.WarmP50),
			fmt.Sprintf("≤ %.0f ms", coldGoalMs(r.Handler)))
	}
	d.Table(t)
	gs := rep.Goals
	if gs == nil {
		gs = ColdStartGoals(rep.Results)
	}
	d.Goals("Against the goals", gs)
	return d.String()
}
