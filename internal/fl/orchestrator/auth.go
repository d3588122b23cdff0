package orchestrator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/httpjson"
)

// Who may call what. The API token (Config.Token: `fl orchestrate --token-file`, generated on
// the first start) opens everything: jobs, node changes, reports and the model repository.
// The FL services the orchestrator starts get tokens derived from it (HMAC-SHA256 over a label
// and the service's identity), so that no service can derive the API token or another
// service's token:
//
//   - a service token (CONTINUUM_FL_TOKEN) per node and role: "MAC.ROLE.ID", MAC the HMAC of
//     the role and the node's id. It names who holds it, and opens only what that service
//     does: POST /report of its own events (the report's role and id must be the token's,
//     else 403), and for the global aggregator's token alone, PUT /model and GET /model/latest.
//     So a client node can neither claim to be the global aggregator (whose round reports end
//     the job) nor replace the global model, nor submit or stop jobs. A `clients` process
//     (Config.GroupClients) runs several clients and gets each one's token in
//     CONTINUUM_FL_TOKENS, a JSON object from client id to token;
//   - a control token (CONTINUUM_FL_CONTROL_TOKEN) per aggregator, the HMAC of a label and
//     its id: what the orchestrator sends to that aggregator's control API
//     (python/src/continuum_fl/control.py), which refuses other callers. An edge node's local
//     aggregator therefore cannot steer the global aggregator or another cluster's; clients get
//     none.
//
// GET /health stays open for probes.

// Environment variables the services read their tokens from.
const (
	ServicesTokenEnv = "CONTINUUM_FL_TOKEN"
	GroupTokensEnv   = "CONTINUUM_FL_TOKENS"
	ControlTokenEnv  = "CONTINUUM_FL_CONTROL_TOKEN"
)

// apiRealm names the orchestrator in its 401s.
const apiRealm = "the FL orchestrator's API"

// serviceRoles are the roles a service token may name (Report.Role).
var serviceRoles = map[string]bool{"global": true, "local": true, "client": true}

func deriveToken(token string, parts ...string) string {
	m := hmac.New(sha256.New, []byte(token))
	// NUL between the parts: ids never hold one, so ("a", "bc") and ("ab", "c") differ.
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// ServiceToken is the token of node id's service in role ("global", "local" or "client"):
// what it sends with its reports (and, the global aggregator's, its model uploads).
func (o *Orchestrator) ServiceToken(role, id string) string {
	return deriveToken(o.cfg.Token, "continuum fl service", role, id) + "." + role + "." + id
}

// ControlToken is the token of aggregator id's control API.
func (o *Orchestrator) ControlToken(id string) string {
	return deriveToken(o.cfg.Token, "continuum fl aggregator control", id)
}

// serviceCaller is the service r's bearer token names, when it is a valid service token.
func (o *Orchestrator) serviceCaller(r *http.Request) (role, id string, ok bool) {
	scheme, got, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", "", false
	}
	got = strings.TrimSpace(got)
	_, rest, _ := strings.Cut(got, ".")
	role, id, found = strings.Cut(rest, ".")
	if !found || !serviceRoles[role] || id == "" || !httpauth.Equal(got, o.ServiceToken(role, id)) {
		return "", "", false
	}
	return role, id, true
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

// isServiceRoute says whether a service token may call r's route at all.
func isServiceRoute(r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	return r.Method == http.MethodPost && p == "/report" || isModelRoute(r)
}

// isModelRoute: the model repository, the global aggregator's alone among the services.
func isModelRoute(r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	return r.Method == http.MethodPut && p == "/model" ||
		(r.Method == http.MethodGet || r.Method == http.MethodHead) && p == "/model/latest"
}

// caller is who sent a request that got past authorize: a service (its role and id), or the
// holder of the API token (service false).
type caller struct {
	service  bool
	role, id string
}

type callerKey struct{}

// callerOf is r's caller (the API token holder for a request authorize did not see).
func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// authorize wraps the API: /health open; the API token opens every route; a service token
// only its service's routes (the model repository for the global aggregator only, 403 for the
// others), and the caller is passed on so that handleReport checks the report is its own.
func (o *Orchestrator) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		if httpauth.HasBearer(r, o.cfg.Token) {
			next.ServeHTTP(w, r)
			return
		}
		role, id, ok := o.serviceCaller(r)
		if !ok || !isServiceRoute(r) {
			httpauth.Unauthorized(w, apiRealm)
			return
		}
		if isModelRoute(r) && role != "global" {
			httpjson.Error(w, http.StatusForbidden, "the model repository is the global aggregator's: the token of "+role+" "+id+" may only POST /report")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller{service: true, role: role, id: id})))
	})
}
