package orchestrator

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/continuum-project/continuum/internal/httpauth"
)

// Who may call what. The API token (Config.Token: `fl orchestrate --token-file`, generated on
// the first start) opens everything: jobs, node changes, reports and the model repository.
// The FL services the orchestrator starts get two tokens derived from it (HMAC-SHA256 with a
// label), so that no service can derive the API token:
//
//   - the services token (CONTINUUM_FL_TOKEN, every service): POST /report, PUT /model and
//     GET /model/latest only, what a service does; a client node cannot submit or stop jobs;
//   - the control token (CONTINUUM_FL_CONTROL_TOKEN, aggregators only): what the orchestrator
//     sends to the aggregators' control API (python/src/continuum_fl/control.py), which refuses
//     other callers; clients never get it.
//
// GET /health stays open for probes.

// Environment variables the services read their tokens from.
const (
	ServicesTokenEnv = "CONTINUUM_FL_TOKEN"
	ControlTokenEnv  = "CONTINUUM_FL_CONTROL_TOKEN"
)

// apiRealm names the orchestrator in its 401s.
const apiRealm = "the FL orchestrator's API"

func deriveToken(token, label string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	return hex.EncodeToString(m.Sum(nil))
}

// ServicesToken is the token the services send with their reports and models.
func (o *Orchestrator) ServicesToken() string {
	return deriveToken(o.cfg.Token, "continuum fl services")
}

// ControlToken is the token of the aggregators' control API.
func (o *Orchestrator) ControlToken() string {
	return deriveToken(o.cfg.Token, "continuum fl aggregator control")
}

// randomToken is a token for an orchestrator given none (its API then opens to no caller but
// the process that made it; tests use Orchestrator.Token).
func randomToken() string {
	b := make([]byte, httpauth.TokenBits/8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Token is the API token (Config.Token, or the one New generated).
func (o *Orchestrator) Token() string { return o.cfg.Token }

// serviceRoutes are what the services token opens.
func isServiceRoute(r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	return r.Method == http.MethodPost && p == "/report" || r.Method == http.MethodPut && p == "/model" ||
		(r.Method == http.MethodGet || r.Method == http.MethodHead) && p == "/model/latest"
}

// authorize wraps the API: /health open, the services' routes with either token, the rest with
// the API token only.
func (o *Orchestrator) authorize(next http.Handler) http.Handler {
	services := o.ServicesToken()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		ok := httpauth.HasBearer(r, o.cfg.Token)
		if !ok && isServiceRoute(r) {
			ok = httpauth.HasBearer(r, services)
		}
		if !ok {
			httpauth.Unauthorized(w, apiRealm)
			return
		}
		next.ServeHTTP(w, r)
	})
}
