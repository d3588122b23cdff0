package server

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// tokenProvider issues and resolves the tokens clients send in the "token" metadata key after
// Authenticate (etcd's --auth-token).
type tokenProvider interface {
	// assign issues a token for user, valid at auth revision rev.
	assign(user string, rev authRev) (string, error)
	// info resolves a token to its user and the revision it is valid at; current is the
	// store's revision (simple tokens are always current).
	info(token string, current authRev) (authInfo, bool)
	invalidateUser(user string)
	enable()
	disable()
}

// DefaultAuthTokenTTL is etcd's --auth-token-ttl default.
const DefaultAuthTokenTTL = 300 * time.Second

// newTokenProvider parses etcd's --auth-token value: "simple" (the default) or
// "jwt,pub-key=<file>,priv-key=<file>,sign-method=<alg>[,ttl=<duration>]". ttl is the simple
// tokens' idle lifetime (--auth-token-ttl).
func newTokenProvider(opt string, ttl time.Duration) (tokenProvider, error) {
	parts := strings.Split(opt, ",")
	kind := parts[0]
	kv := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.Contains(v, "=") {
			return nil, fmt.Errorf("--auth-token %q: option %q is not key=value", opt, p)
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("--auth-token %q: option %q given twice", opt, k)
		}
		kv[k] = v
	}
	switch kind {
	case "", "simple":
		if len(kv) > 0 {
			return nil, fmt.Errorf("--auth-token %q: simple tokens take no options", opt)
		}
		if ttl <= 0 {
			ttl = DefaultAuthTokenTTL
		}
		return newSimpleTokens(ttl), nil
	case "jwt":
		t, err := newJWTTokens(kv)
		if err != nil {
			return nil, fmt.Errorf("--auth-token %q: %w", opt, err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("--auth-token %q: unknown token type %q (allowed: simple, jwt)", opt, kind)
}

// simpleTokens are etcd's simple tokens: 16 random letters, a dot and a sequence number,
// mapped to a user in memory. A token lives until it has not been used for ttl (each use
// renews it), its user is deleted or changes password, auth is disabled, or the member
// restarts (clients then authenticate again, as clientv3 does on "invalid auth token").
type simpleTokens struct {
	ttl   time.Duration
	index atomic.Uint64

	now func() time.Time // the clock (tests move it)

	mu        sync.Mutex
	tokens    map[string]simpleEntry // guarded by mu
	lastSweep time.Time              // guarded by mu
}

type simpleEntry struct {
	user    string
	expires time.Time
}

const tokenLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func newSimpleTokens(ttl time.Duration) *simpleTokens {
	return &simpleTokens{ttl: ttl, tokens: map[string]simpleEntry{}, now: time.Now}
}

func (t *simpleTokens) assign(user string, _ authRev) (string, error) {
	var b [16]byte
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(tokenLetters))))
		if err != nil {
			return "", err
		}
		b[i] = tokenLetters[n.Int64()]
	}
	tok := fmt.Sprintf("%s.%d", b[:], t.index.Add(1))
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	// Expired tokens are dropped lazily: on use, and here at most once a second, so that
	// the map stays bounded by the tokens of the last ttl without a goroutine of its own.
	if now.Sub(t.lastSweep) > time.Second {
		for k, e := range t.tokens {
			if now.After(e.expires) {
				delete(t.tokens, k)
			}
		}
		t.lastSweep = now
	}
	t.tokens[tok] = simpleEntry{user: user, expires: now.Add(t.ttl)}
	return tok, nil
}

func (t *simpleTokens) info(tok string, current authRev) (authInfo, bool) {
	head, idx, ok := strings.Cut(tok, ".")
	if !ok || head == "" {
		return authInfo{}, false
	}
	if _, err := strconv.ParseUint(idx, 10, 64); err != nil {
		return authInfo{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.tokens[tok]
	if !ok {
		return authInfo{}, false
	}
	now := t.now()
	if now.After(e.expires) {
		delete(t.tokens, tok)
		return authInfo{}, false
	}
	e.expires = now.Add(t.ttl)
	t.tokens[tok] = e
	return authInfo{user: e.user, rev: current}, true
}

func (t *simpleTokens) invalidateUser(user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.tokens {
		if e.user == user {
			delete(t.tokens, k)
		}
	}
}

func (t *simpleTokens) enable() {}

// disable drops every token, as etcd's simple token provider does.
func (t *simpleTokens) disable() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = map[string]simpleEntry{}
}

// jwtTokens are etcd's JWT tokens: claims username, revision and exp, signed with the
// private key; a member given only the public key verifies tokens and issues none. Beside
// etcd's claims a token carries "stamp", the rest of the auth revision it was issued at
// (authRev: etcd's counter alone does not order copies made on two members), so that every
// member judges its age alike; a token without it (etcd's, or an older member's) is older
// than any change at its counter, so at worst the client authenticates again.
type jwtTokens struct {
	method     jwt.SigningMethod
	sign       any // private key (nil: verify only)
	verify     any // public key
	ttl        time.Duration
	verifyOnly bool
}

// DefaultJWTTTL is etcd's default ttl of JWT tokens.
const DefaultJWTTTL = 5 * time.Minute

func newJWTTokens(opts map[string]string) (*jwtTokens, error) {
	for k := range opts {
		switch k {
		case "pub-key", "priv-key", "sign-method", "ttl":
		default:
			return nil, fmt.Errorf("unknown option %q (allowed: pub-key, priv-key, sign-method, ttl)", k)
		}
	}
	t := &jwtTokens{ttl: DefaultJWTTTL}
	if v := opts["ttl"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("ttl %q: want a positive duration such as 5m", v)
		}
		t.ttl = d
	}
	t.method = jwt.GetSigningMethod(opts["sign-method"])
	if t.method == nil {
		return nil, fmt.Errorf("sign-method %q: want one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA", opts["sign-method"])
	}
	read := func(k string) ([]byte, error) {
		if opts[k] == "" {
			return nil, nil
		}
		b, err := os.ReadFile(opts[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		return b, nil
	}
	pubPEM, err := read("pub-key")
	if err != nil {
		return nil, err
	}
	privPEM, err := read("priv-key")
	if err != nil {
		return nil, err
	}
	if pubPEM == nil && privPEM == nil {
		return nil, errors.New("pub-key or priv-key is required")
	}
	var pub, priv any
	switch t.method.(type) {
	case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
		if privPEM != nil {
			if priv, err = jwt.ParseRSAPrivateKeyFromPEM(privPEM); err != nil {
				return nil, fmt.Errorf("priv-key: %w", err)
			}
		}
		if pubPEM != nil {
			if pub, err = jwt.ParseRSAPublicKeyFromPEM(pubPEM); err != nil {
				return nil, fmt.Errorf("pub-key: %w", err)
			}
		}
		if priv != nil && pub != nil && !pub.(*rsa.PublicKey).Equal(priv.(*rsa.PrivateKey).Public()) {
			return nil, errors.New("public and private keys don't match")
		}
		if priv != nil {
			pub = priv.(*rsa.PrivateKey).Public()
		}
	case *jwt.SigningMethodECDSA:
		if privPEM != nil {
			if priv, err = jwt.ParseECPrivateKeyFromPEM(privPEM); err != nil {
				return nil, fmt.Errorf("priv-key: %w", err)
			}
		}
		if pubPEM != nil {
			if pub, err = jwt.ParseECPublicKeyFromPEM(pubPEM); err != nil {
				return nil, fmt.Errorf("pub-key: %w", err)
			}
		}
		if priv != nil && pub != nil && !pub.(*ecdsa.PublicKey).Equal(priv.(*ecdsa.PrivateKey).Public()) {
			return nil, errors.New("public and private keys don't match")
		}
		if priv != nil {
			pub = priv.(*ecdsa.PrivateKey).Public()
		}
	case *jwt.SigningMethodEd25519:
		if privPEM != nil {
			if priv, err = jwt.ParseEdPrivateKeyFromPEM(privPEM); err != nil {
				return nil, fmt.Errorf("priv-key: %w", err)
			}
		}
		if pubPEM != nil {
			if pub, err = jwt.ParseEdPublicKeyFromPEM(pubPEM); err != nil {
				return nil, fmt.Errorf("pub-key: %w", err)
			}
		}
		if priv != nil {
			pub = priv.(ed25519.PrivateKey).Public()
		}
	default:
		return nil, fmt.Errorf("sign-method %q: not an asymmetric method (want RS*, PS*, ES* or EdDSA)", opts["sign-method"])
	}
	t.sign, t.verify, t.verifyOnly = priv, pub, priv == nil
	return t, nil
}

func (t *jwtTokens) assign(user string, rev authRev) (string, error) {
	if t.verifyOnly {
		return "", errors.New("auth: token signing attempted with verify-only key")
	}
	tk := jwt.NewWithClaims(t.method, jwt.MapClaims{
		"username": user,
		"revision": rev.Rev,
		"stamp":    rev.Stamp.String(),
		"exp":      time.Now().Add(t.ttl).Unix(),
	})
	return tk.SignedString(t.sign)
}

func (t *jwtTokens) info(tok string, _ authRev) (authInfo, bool) {
	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return t.verify, nil },
		jwt.WithValidMethods([]string{t.method.Alg()}), jwt.WithExpirationRequired())
	if err != nil || !parsed.Valid {
		return authInfo{}, false
	}
	claims, ok := parsed.Claims.(jwt.MapClaims)
	if !ok {
		return authInfo{}, false
	}
	user, ok := claims["username"].(string)
	if !ok {
		return authInfo{}, false
	}
	rev, ok := claims["revision"].(float64)
	if !ok || rev < 0 || rev > 1<<53 || rev != math.Trunc(rev) {
		return authInfo{}, false
	}
	ar := authRev{Rev: uint64(rev)}
	if s, ok := claims["stamp"].(string); ok {
		if ar.Stamp, ok = parseAuthStamp(s); !ok {
			return authInfo{}, false
		}
	}
	return authInfo{user: user, rev: ar}, true
}

// JWT tokens are self-contained: nothing to drop (a deleted user's token still names a user
// the store no longer knows, and the revision bump makes it old).
func (t *jwtTokens) invalidateUser(string) {}
func (t *jwtTokens) enable()               {}
func (t *jwtTokens) disable()              {}
