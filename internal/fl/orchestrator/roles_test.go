package orchestrator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/fl/plan"
)

// send is one API call with a bearer token; it returns the status code and the body.
func send(t *testing.T, srv *httptest.Server, method, path, body, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestClientTokenCannotReplaceGlobalModel: a client node's service token cannot PUT /model (or
// read the repository): once every service got one shared token, and a client's upload
// became GET /model/latest, which a resumed global aggregator starts from (--resume-url). Only
// the global aggregator's token opens the repository.
func TestClientTokenCannotReplaceGlobalModel(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	for _, tok := range []string{o.ServiceToken("client", "e2"), o.ServiceToken("local", "e1")} {
		if code, body := send(t, srv, "PUT", "/model?round=999999", "poisoned", tok); code != http.StatusForbidden {
			t.Errorf("PUT /model with %s = %d %q, want 403", tok, code, body)
		}
		if code, _ := send(t, srv, "GET", "/model/latest", "", tok); code != http.StatusForbidden {
			t.Errorf("GET /model/latest with %s = %d, want 403", tok, code)
		}
	}
	if code, body := send(t, srv, "GET", "/model/latest", "", "api-t0ken"); code != http.StatusNotFound || strings.Contains(body, "poisoned") {
		t.Fatalf("a client node's token replaced the global model: GET /model/latest = %d %q", code, body)
	}
	// The global aggregator's token does open it (its snapshot upload and --resume-url).
	if code, body := send(t, srv, "PUT", "/model?round=3", "real", o.ServiceToken("global", "g")); code != http.StatusNoContent {
		t.Fatalf("PUT /model with the global aggregator's token = %d %q, want 204", code, body)
	}
	if code, body := send(t, srv, "GET", "/model/latest", "", o.ServiceToken("global", "g")); code != http.StatusOK || body != "real" {
		t.Fatalf("GET /model/latest with the global aggregator's token = %d %q, want 200 \"real\"", code, body)
	}
}

// TestEachAggregatorHasItsOwnControlToken: a cluster's (local) aggregator runs on an edge node;
// were it started with the global aggregator's CONTINUUM_FL_CONTROL_TOKEN, that node could
// POST /stop or /config to the global aggregator's (and every other cluster's) control API,
// which is meant to take only the orchestrator's calls. Each aggregator gets its own, the one
// the orchestrator sends to it (ControlToken(id)); clients get none.
func TestEachAggregatorHasItsOwnControlToken(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	j := newRun(o, JobSpec{})
	j.members = map[string]Member{"g": {Host: "10.0.0.1"}, "e1": {Host: "10.0.0.2"}, "e3": {Host: "10.0.0.4"}, "e2": {Host: "10.0.0.3"}}
	j.ports = map[string]int{"g": 8080, "e1": 8081, "e3": 8082, "e2": 8083}
	conf := plan.Config{Global: "g", Clusters: []plan.Cluster{{Aggregator: "e1", Clients: []string{"e2"}}, {Aggregator: "e3"}}}
	envOf := func(s Service, name string) string {
		for _, e := range s.Env {
			if v, ok := strings.CutPrefix(e, name+"="); ok {
				return v
			}
		}
		return ""
	}
	g, l1, l3 := j.globalService(conf, false), j.localService(conf, conf.Clusters[0]), j.localService(conf, conf.Clusters[1])
	gc, lc1, lc3 := envOf(g, ControlTokenEnv), envOf(l1, ControlTokenEnv), envOf(l3, ControlTokenEnv)
	if gc == "" || gc == lc1 || lc1 == lc3 {
		t.Fatalf("aggregators share a control token (global %q, e1 %q, e3 %q)", gc, lc1, lc3)
	}
	if gc != o.ControlToken("g") || lc1 != o.ControlToken("e1") {
		t.Fatalf("control tokens %q %q are not what the orchestrator sends (%q %q)", gc, lc1, o.ControlToken("g"), o.ControlToken("e1"))
	}
	c := j.clientService("e2", "e1")
	if envOf(c, ControlTokenEnv) != "" {
		t.Error("a client got a control token")
	}
	// Each service's report token names it.
	for _, s := range []struct {
		svc      Service
		role, id string
	}{{g, "global", "g"}, {l1, "local", "e1"}, {c, "client", "e2"}} {
		if got := envOf(s.svc, ServicesTokenEnv); got != o.ServiceToken(s.role, s.id) {
			t.Errorf("%s: %s = %q, want %s %s's token", s.svc.Name, ServicesTokenEnv, got, s.role, s.id)
		}
	}
}

// TestGroupedClientsGetEachClientsToken: a `clients` process runs several clients; it gets
// each one's token (CONTINUUM_FL_TOKENS) and no token of another role.
func TestGroupedClientsGetEachClientsToken(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	j := newRun(o, JobSpec{})
	j.members = map[string]Member{"g": {Host: "h0"}, "c1": {Host: "h1"}, "c2": {Host: "h1"}}
	j.ports = map[string]int{"g": 8080, "c1": 8081, "c2": 8082}
	s, err := j.groupService("h1", []string{"c1", "c2"}, map[string]string{"c1": "g", "c2": "g"})
	if err != nil {
		t.Fatal(err)
	}
	var tokens map[string]string
	for _, e := range s.Env {
		if v, ok := strings.CutPrefix(e, GroupTokensEnv+"="); ok {
			if err := json.Unmarshal([]byte(v), &tokens); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(e, ServicesTokenEnv+"=") || strings.HasPrefix(e, ControlTokenEnv+"=") {
			t.Errorf("the clients process got %s", e)
		}
	}
	if len(tokens) != 2 || tokens["c1"] != o.ServiceToken("client", "c1") || tokens["c2"] != o.ServiceToken("client", "c2") {
		t.Fatalf("%s = %v, want c1's and c2's client tokens", GroupTokensEnv, tokens)
	}
}

// TestClientTokenCannotReportForTheGlobal: a client node's token may report its own events
// only. A report claiming role "global" (whose round reports end the job at its target) or
// another node's id is refused with 403 and never reaches the job; once every service shared
// one token and one client node could stop everyone's training.
func TestClientTokenCannotReportForTheGlobal(t *testing.T) {
	o := newAPIOrchestrator(t, "api-t0ken")
	j := newRun(o, JobSpec{Rounds: 50})
	o.mu.Lock()
	o.job = j
	o.mu.Unlock()
	defer func() { o.mu.Lock(); o.job = nil; o.mu.Unlock() }()
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	client := o.ServiceToken("client", "e7")
	for _, body := range []string{
		`{"id":"e7","role":"global","event":"round","round":50}`,
		`{"id":"g","role":"global","event":"round","round":50}`,
		`{"id":"e8","role":"client","event":"round","round":1}`,
	} {
		if code, resp := send(t, srv, "POST", "/report", body, client); code != http.StatusForbidden {
			t.Errorf("POST /report %s with e7's client token = %d %q, want 403", body, code, resp)
		}
	}
	// A token naming another identity does not verify: the MAC covers role and id.
	forged := strings.Replace(client, ".client.e7", ".global.e7", 1)
	if code, _ := send(t, srv, "POST", "/report", `{"id":"e7","role":"global","event":"round","round":50}`, forged); code != http.StatusUnauthorized {
		t.Errorf("a client token relabelled global = %d, want 401", code)
	}
	select {
	case rep := <-j.reports:
		t.Fatalf("a refused report reached the job: %+v (stop reason %q)", rep, j.onReport(rep))
	default:
	}
	// The client's own report, and the global aggregator's with its token, are taken.
	if code, resp := send(t, srv, "POST", "/report", `{"id":"e7","role":"client","event":"round","round":1}`, client); code != http.StatusNoContent {
		t.Fatalf("e7's own report = %d %q, want 204", code, resp)
	}
	if rep := <-j.reports; rep.ID != "e7" || rep.Role != "client" {
		t.Fatalf("report %+v, want e7's", rep)
	}
	if code, resp := send(t, srv, "POST", "/report", `{"id":"g","role":"global","event":"round","round":50}`, o.ServiceToken("global", "g")); code != http.StatusNoContent {
		t.Fatalf("the global aggregator's report = %d %q, want 204", code, resp)
	}
	if reason := j.onReport(<-j.reports); reason == "" {
		t.Fatal("the global aggregator's report at the target round did not end the job")
	}
}
