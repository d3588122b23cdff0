package orchestrator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// TestAttackClientTokenReplacesGlobalModel: every client node's service gets the services token
// (CONTINUUM_FL_TOKEN). With it a client can PUT /model?round=R for any R, so its upload becomes
// GET /model/latest, which a resumed global aggregator starts from (--resume-url): one client
// node poisons the global model. Only the global aggregator uploads models.
func TestAttackClientTokenReplacesGlobalModel(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("PUT", srv.URL+"/model?round=999999", strings.NewReader("poisoned"))
	req.Header.Set("Authorization", "Bearer "+o.ServicesToken()) // what a client node holds
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", srv.URL+"/model/latest", nil)
	req.Header.Set("Authorization", "Bearer api-t0ken")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) == "poisoned" {
		t.Fatalf("a client node's token (PUT answered, then /model/latest = %q, X-Round %s) replaced the global model", b, resp.Header.Get("X-Round"))
	}
}

// TestAttackLocalAggregatorHoldsGlobalControlToken: a cluster's (local) aggregator runs on an edge
// node, yet it is started with the same CONTINUUM_FL_CONTROL_TOKEN as the global aggregator, so
// that node can POST /stop or /config to the global aggregator's (and every other cluster's)
// control API, which is meant to take only the orchestrator's calls.
func TestAttackLocalAggregatorHoldsGlobalControlToken(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	j := newRun(o, JobSpec{})
	j.members = map[string]Member{"g": {Host: "10.0.0.1"}, "e1": {Host: "10.0.0.2"}}
	j.ports = map[string]int{"g": 8080, "e1": 8081}
	conf := plan.Config{Global: "g", Clusters: []plan.Cluster{{Aggregator: "e1", Clients: []string{"e2"}}}}
	control := func(s Service) string {
		for _, e := range s.Env {
			if v, ok := strings.CutPrefix(e, ControlTokenEnv+"="); ok {
				return v
			}
		}
		return ""
	}
	g, l := control(j.globalService(conf, false)), control(j.localService(conf, conf.Clusters[0]))
	if g == "" || g == l {
		t.Fatalf("the edge node's local aggregator gets the global aggregator's control token (%q == %q)", l, g)
	}
}

// TestAttackClientTokenStopsTheJob: auth.go says a client node "cannot submit or stop jobs", but
// the services token every client holds may POST /report, and a report claiming role "global"
// with a round at the job's target ends the job: one client node stops everyone's training.
func TestAttackClientTokenStopsTheJob(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	j := newRun(o, JobSpec{Rounds: 50})
	o.mu.Lock()
	o.job = j
	o.mu.Unlock()
	defer func() { o.mu.Lock(); o.job = nil; o.mu.Unlock() }()
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/report", strings.NewReader(`{"id":"e7","role":"global","event":"round","round":50}`))
	req.Header.Set("Authorization", "Bearer "+o.ServicesToken()) // a client node's token
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var rep Report
	select {
	case rep = <-j.reports:
	default:
		return // refused: fine
	}
	if reason := j.onReport(rep); reason != "" {
		t.Fatalf("a client node's forged report (answer %d) stops the job: %q", resp.StatusCode, reason)
	}
}
