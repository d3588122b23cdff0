package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/continuum-project/continuum/internal/httpauth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rules"
)

// Auth is who a request comes from. A nil *Auth is an unauthenticated caller (`auth == null` in
// rules). It is shared between the requests carrying the same token: read-only.
type Auth struct {
	// Admin callers (a database secret; "owner" in emulator mode) bypass the rules.
	Admin    bool
	UID      string         // the ID token's sub
	Provider string         // firebase.sign_in_provider without ".com" ("password", "anonymous", "custom", ...)
	Claims   map[string]any // every claim of the ID token: auth.token in rules
	// Expires is when the ID token expires (zero for secrets and owner): a stream must then
	// tell its client (SSE auth_revoked, WebSocket "ac") and stop serving it.
	Expires time.Time
}

// ForRules is a as the rules see it (auth in expressions).
func (a *Auth) ForRules() *rules.Auth {
	if a == nil {
		return nil
	}
	return &rules.Auth{UID: a.UID, Provider: a.Provider, Token: a.Claims}
}

type authKey struct{}

// WithAuth returns ctx carrying the caller; reads and writes made with it are checked against
// the rules as that caller. A context without one is an unauthenticated caller, never an admin.
func WithAuth(ctx context.Context, a *Auth) context.Context {
	return context.WithValue(ctx, authKey{}, a)
}

// AuthFrom is the caller WithAuth put in ctx (nil: unauthenticated).
func AuthFrom(ctx context.Context) *Auth {
	a, _ := ctx.Value(authKey{}).(*Auth)
	return a
}

// ErrPermissionDenied is a read or write the rules do not allow: 401 {"error" : "Permission denied"}.
var ErrPermissionDenied = errors.New("Permission denied")

// AuthError is a credential that was given but is not valid: 401 with Firebase's message.
type AuthError struct{ Msg string }

func (e *AuthError) Error() string { return e.Msg }

// The messages Firebase answers with a 401 for a bad credential.
const (
	msgCannotParse = "Could not parse auth token."
	msgExpired     = "Auth token is expired"
)

// Verifier checks credentials: database secrets, the emulator's "owner" and Firebase ID
// tokens (RS256 JWTs signed by one of keys; unsigned ones only in emulator mode).
type Verifier struct {
	secrets   [][]byte
	emulator  bool
	projectID string
	issuer    string
	keys      JWTKeys
	now       func() time.Time

	// verified caches ID tokens already verified (a client sends the same token with every
	// request for an hour): token -> its Auth, valid until the token's exp. Bounded by
	// maxVerified, emptied when full.
	mu       sync.Mutex
	verified map[string]*Auth // guarded by mu
}

const maxVerified = 4096

// Security is the server's rules and authentication configuration (rtdb's Config.Security).
type Security struct {
	// RulesFile is a database.rules.json applied to every database that has no rules of its own
	// (set with PUT /.settings/rules.json). Empty: no rules, everything allowed (the emulator's
	// default).
	RulesFile string
	// AuthSecrets are legacy database secrets: a request carrying one is an admin (rules bypassed).
	AuthSecrets []string
	// AuthSecretFile holds more secrets, one a line ('#' comments).
	AuthSecretFile string
	// Emulator makes "owner" an admin credential and accepts unsigned (alg none) ID tokens, as
	// the Firebase emulator does. Off, "owner" counts as no credential.
	Emulator bool
	// ProjectID is the aud ID tokens must carry (and the suffix of their iss).
	ProjectID string
	// JWTIssuer, when set, is the exact iss ID tokens must carry (Firebase's is its secure token
	// service's URL followed by the project id); empty: any issuer ending in "/<ProjectID>".
	JWTIssuer string
	// JWTKeysFile holds the public keys ID tokens are verified with (see ParseJWTKeys).
	JWTKeysFile string
}

// NewVerifier reads the secrets and keys sec names; now is the clock tokens are checked with.
func NewVerifier(sec Security, now func() time.Time) (*Verifier, error) {
	a := &Verifier{emulator: sec.Emulator, projectID: sec.ProjectID, issuer: sec.JWTIssuer, now: now}
	for _, s := range sec.AuthSecrets {
		if s != "" {
			a.secrets = append(a.secrets, []byte(s))
		}
	}
	if sec.AuthSecretFile != "" {
		b, err := os.ReadFile(sec.AuthSecretFile)
		if err != nil {
			return nil, fmt.Errorf("auth secret file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				a.secrets = append(a.secrets, []byte(line))
			}
		}
	}
	if sec.JWTKeysFile != "" {
		if sec.ProjectID == "" {
			return nil, errors.New("--jwt-keys needs --project-id: the audience (aud) ID tokens must carry")
		}
		b, err := os.ReadFile(sec.JWTKeysFile)
		if err != nil {
			return nil, fmt.Errorf("jwt keys: %w", err)
		}
		if a.keys, err = ParseJWTKeys(b); err != nil {
			return nil, fmt.Errorf("jwt keys %s: %w", sec.JWTKeysFile, err)
		}
	}
	return a, nil
}

// Credential is the token a request carries: ?auth=, ?access_token= or Authorization: Bearer.
func Credential(r *http.Request) string {
	q := r.URL.Query()
	if t := q.Get("auth"); t != "" {
		return t
	}
	if t := q.Get("access_token"); t != "" {
		return t
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "Bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Authenticate identifies the caller of r: nil for none, an *AuthError for a bad credential.
func (a *Verifier) Authenticate(r *http.Request) (*Auth, error) {
	return a.Verify(Credential(r))
}

// Verify identifies the caller presenting tok (what a WebSocket "auth" request carries):
// a database secret, "owner" (admin in emulator mode; outside it, no credential at all, so that
// the Admin SDKs' emulator mode keeps working as an unauthenticated client) or an ID token.
func (a *Verifier) Verify(tok string) (*Auth, error) {
	if tok == "" {
		return nil, nil
	}
	// Every secret is compared, each hashed first (httpauth.Equal), so the time taken tells
	// neither a secret's length nor which one matched.
	admin := false
	for _, s := range a.secrets {
		if httpauth.Equal(string(s), tok) {
			admin = true
		}
	}
	if admin {
		return &Auth{Admin: true}, nil
	}
	if tok == "owner" {
		if a.emulator {
			return &Auth{Admin: true}, nil
		}
		return nil, nil
	}
	a.mu.Lock()
	au, ok := a.verified[tok]
	a.mu.Unlock()
	if ok {
		if au.Expires.IsZero() || a.now().Before(au.Expires) { // zero: an emulator's unsigned token
			return au, nil
		}
		return nil, &AuthError{msgExpired}
	}
	au, err := a.idToken(tok)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if len(a.verified) >= maxVerified {
		a.verified = nil
	}
	if a.verified == nil {
		a.verified = make(map[string]*Auth)
	}
	a.verified[tok] = au
	a.mu.Unlock()
	return au, nil
}

// idToken verifies a Firebase ID token as Firebase documents it: RS256 with a known key id,
// exp in the future, iat (required) in the past, aud exactly the project id (a string, not a
// list), iss the project's issuer, sub a non-empty string of at most 128 characters, auth_time
// (required) in the past.
func (a *Verifier) idToken(tok string) (*Auth, error) {
	if a.emulator {
		if au, ok := a.unsignedToken(tok); ok {
			return au, nil
		}
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(a.now),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt()}
	if a.projectID != "" {
		opts = append(opts, jwt.WithAudience(a.projectID))
	} else if !a.emulator {
		return nil, &AuthError{msgCannotParse + " (ID tokens need --project-id)"}
	}
	if a.issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.issuer))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if len(a.keys.ByID) == 0 && len(a.keys.Unnamed) == 0 {
			return nil, errors.New("no --jwt-keys configured")
		}
		kid, _ := t.Header["kid"].(string)
		if k, ok := a.keys.ByID[kid]; ok {
			return k, nil
		}
		if len(a.keys.Unnamed) == 0 {
			return nil, fmt.Errorf("unknown key id %q", kid)
		}
		var set jwt.VerificationKeySet // keys given without an id: any may have signed it
		for _, k := range a.keys.Unnamed {
			set.Keys = append(set.Keys, k)
		}
		return set, nil
	})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, &AuthError{msgExpired}
	case err != nil:
		return nil, &AuthError{fmt.Sprintf("%s (%v)", msgCannotParse, err)}
	}
	iss, _ := claims["iss"].(string)
	if a.issuer == "" && a.projectID != "" && !strings.HasSuffix(iss, "/"+a.projectID) {
		return nil, &AuthError{fmt.Sprintf("%s (issuer %q is not the project %q's)", msgCannotParse, iss, a.projectID)}
	}
	sub, _ := claims["sub"].(string)
	if sub == "" || len(sub) > 128 {
		return nil, &AuthError{msgCannotParse + " (sub must be a non-empty string of at most 128 characters)"}
	}
	// Firebase requires iat and auth_time (the parser checks iat only when present) and an aud
	// that is the project id itself: a list naming other projects too is a token for them.
	if _, ok := claims["iat"].(float64); !ok {
		return nil, &AuthError{msgCannotParse + " (iat is missing: an ID token carries its issue time)"}
	}
	at, ok := claims["auth_time"].(float64)
	if !ok {
		return nil, &AuthError{msgCannotParse + " (auth_time is missing: an ID token carries the time its user signed in)"}
	}
	if time.Unix(int64(at), 0).After(a.now()) {
		return nil, &AuthError{msgCannotParse + " (auth_time is in the future)"}
	}
	if aud, ok := claims["aud"].(string); a.projectID != "" && (!ok || aud != a.projectID) {
		return nil, &AuthError{fmt.Sprintf("%s (aud must be the string %q, the project id; got %v)", msgCannotParse, a.projectID, claims["aud"])}
	}
	exp, _ := claims.GetExpirationTime()
	return authOf(claims, sub, exp.Time), nil
}

func authOf(claims jwt.MapClaims, sub string, exp time.Time) *Auth {
	au := &Auth{UID: sub, Claims: map[string]any(claims), Expires: exp}
	if fb, ok := claims["firebase"].(map[string]any); ok {
		if p, ok := fb["sign_in_provider"].(string); ok {
			au.Provider = strings.TrimSuffix(p, ".com")
		}
	}
	return au
}

// unsignedToken accepts, in emulator mode, an unsigned token (alg none, empty signature) as the
// Firebase emulator does: the JS SDK's mockUserToken makes one with iat 0 and exp 3600 unless
// told otherwise, so the emulator checks neither the times nor aud/iss, only that sub names the
// user. Such a token never expires here (Expires zero).
func (a *Verifier) unsignedToken(tok string) (*Auth, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[2] != "" {
		return nil, false
	}
	claims := jwt.MapClaims{}
	t, _, err := jwt.NewParser().ParseUnverified(tok, claims)
	if err != nil || t.Method != jwt.SigningMethodNone {
		return nil, false
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		sub, _ = claims["user_id"].(string)
	}
	if sub == "" || len(sub) > 128 {
		return nil, false
	}
	return authOf(claims, sub, time.Time{}), true
}
