package rtdb

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
)

const project = "demo-project"

// signer makes Firebase-shaped ID tokens with its own RSA key.
type signer struct {
	key *rsa.PrivateKey
	kid string
}

var (
	keyOnce sync.Once
	keyA    *rsa.PrivateKey
	keyB    *rsa.PrivateKey
)

// testKeys are generated once per test binary (RSA generation is slow under -race).
func testKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keyOnce.Do(func() {
		var err error
		if keyA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keyB, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return keyA, keyB
}

func claimsFor(uid string, now time.Time, edit func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": "https://issuer.invalid/" + project, "aud": project, "sub": uid, "user_id": uid,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "auth_time": now.Add(-time.Minute).Unix(),
		"email": uid + "@example.invalid", "email_verified": true,
		"firebase": map[string]any{"sign_in_provider": "password", "identities": map[string]any{}},
	}
	if edit != nil {
		edit(c)
	}
	return c
}

func (s signer) token(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = s.kid
	out, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func unsigned(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	out, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jwks writes the public key of k as a JWKS file.
func jwks(t testing.TB, k *rsa.PrivateKey, kid string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": enc.EncodeToString(k.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(k.E)).Bytes())}}})
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// certMap writes the public key of k as a JSON object of key id to a PEM certificate.
func certMap(t testing.TB, k *rsa.PrivateKey, kid string) string {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{kid: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))})
	p := filepath.Join(t.TempDir(), "certs.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const denied = "{\n  \"error\" : \"Permission denied\"\n}\n"

const docRules = `{
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid",
        "name": {".validate": "newData.isString() && newData.val().length <= 20"},
        "age": {".validate": "newData.isNumber() && newData.val() >= 0"},
        "seen": {".validate": "newData.val() <= now"}
      }
    },
    "admins": {".read": false, ".write": false},
    "posts": {
      ".read": true,
      "$post": {".write": "root.child('admins').child(auth.uid).exists()"}
    },
    "verified": {".read": "auth.token.email_verified === true && auth.provider === 'password'"}
  }
}`

func TestRESTRulesFromTheFirebaseDocs(t *testing.T) {
	ka, _ := testKeys(t)
	sg := signer{ka, "k1"}
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", docRules), AuthSecrets: []string{"s3cret"},
			ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	})
	now := time.Now()
	ada := "auth=" + sg.token(t, claimsFor("ada", now, nil))
	bob := "access_token=" + sg.token(t, claimsFor("bob", now, nil))
	for i, s := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", "/users/ada.json?" + ada, `{"name":"Ada","age":36}`, 200, `{"age":36,"name":"Ada"}`},
		{"GET", "/users/ada.json?" + ada, "", 200, `{"age":36,"name":"Ada"}`},
		{"GET", "/users/ada/name.json?" + ada, "", 200, `"Ada"`}, // cascades
		{"GET", "/users/ada.json?" + bob, "", 401, denied},
		{"GET", "/users/ada.json?shallow=true&" + ada, "", 200, `{"age":true,"name":true}`},
		{"GET", "/users/ada.json?shallow=true&" + bob, "", 401, denied},
		{"GET", "/users/ada.json", "", 401, denied},
		{"PUT", "/users/ada/name.json?" + bob, `"Bob"`, 401, denied},
		// A query is allowed only where a read of its location is: rules are not filters.
		{"GET", `/users.json?orderBy="$key"&` + ada, "", 401, denied},
		{"GET", `/users.json?orderBy="$key"&auth=s3cret`, "", 200, `{"ada":{"age":36,"name":"Ada"}}`},
		// Validation: types and lengths.
		{"PUT", "/users/ada/name.json?" + ada, `"Augusta Ada King, Countess of Lovelace"`, 401, denied},
		{"PUT", "/users/ada/age.json?" + ada, `"old"`, 401, denied},
		{"PUT", "/users/ada/age.json?" + ada, `-1`, 401, denied},
		{"PATCH", "/users/ada.json?" + ada, `{"age":37,"name":"Ada L."}`, 200, `{"age":37,"name":"Ada L."}`},
		// newData sees the server's timestamp, which is not after now.
		{"PUT", "/users/ada/seen.json?" + ada, `{".sv":"timestamp"}`, 200, ""},
		// A multi-path PATCH is allowed only when every path is; nothing of it is written.
		{"PATCH", "/users.json?" + ada, `{"ada/age":38,"bob/age":1}`, 401, denied},
		{"GET", "/users/ada/age.json?" + ada, "", 200, `37`},
		{"DELETE", "/users/ada/seen.json?" + ada, "", 200, `null`},
		// root.child('admins').child(auth.uid).exists()
		{"PUT", "/posts/p1.json?" + bob, `{"title":"hi"}`, 401, denied},
		{"PUT", "/admins/bob.json?auth=s3cret", `true`, 200, `true`},
		{"GET", "/admins.json?" + bob, "", 401, denied},
		{"PUT", "/posts/p1.json?" + bob, `{"title":"hi"}`, 200, `{"title":"hi"}`},
		{"POST", "/posts.json?" + ada, `{"title":"no"}`, 401, denied},
		{"GET", "/posts.json", "", 200, `{"p1":{"title":"hi"}}`},
		// auth.token claims and auth.provider.
		{"GET", "/verified.json?" + ada, "", 200, `null`},
		{"GET", "/verified.json", "", 401, denied},
		// The secret is an admin: rules bypassed; a bearer header works as the query parameter.
		{"PUT", "/anything.json?auth=s3cret", `1`, 200, `1`},
		{"PUT", "/anything.json", `2`, 401, denied},
		// An if-match write that is denied does not leak the value in a 412.
		{"PUT", "/users/ada/age.json?" + bob, `1`, 401, denied},
	} {
		r := do(t, s.method, base+s.path, s.body)
		if r.code != s.code || (s.want != "" && r.body != s.want) {
			t.Fatalf("step %d: %s %s %s: got %d %q, want %d %q", i, s.method, s.path, s.body, r.code, r.body, s.code, s.want)
		}
	}
	r := do(t, "GET", base+"/anything.json", "", "Authorization", "Bearer s3cret")
	if r.code != 200 || r.body != "1" {
		t.Errorf("Bearer secret: %d %s", r.code, r.body)
	}
	r = do(t, "PUT", base+"/users/ada/age.json", "5", "Authorization", "Bearer "+strings.TrimPrefix(bob, "access_token="), "if-match", "x")
	if r.code != 401 {
		t.Errorf("denied if-match write: %d %s, want 401 before the precondition", r.code, r.body)
	}
}

func TestTokens(t *testing.T) {
	ka, kb := testKeys(t)
	good, other := signer{ka, "k1"}, signer{kb, "k1"}
	now := time.Now()
	rulesFile := writeFile(t, "rules.json", `{"rules": {"$uid": {".read": "auth != null && auth.uid === $uid"}, "open": {".read": true}}}`)
	strict := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: rulesFile, AuthSecrets: []string{"s1", "s2"}, ProjectID: project,
			JWTKeysFile: certMap(t, ka, "k1")}
	})
	emu := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: rulesFile, Emulator: true, ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	})
	parse := func(detail string) func(string) bool {
		return func(b string) bool {
			return strings.HasPrefix(b, "{\n  \"error\" : \"Could not parse auth token.") && strings.Contains(b, detail)
		}
	}
	is := func(want string) func(string) bool { return func(b string) bool { return b == want } }
	for _, c := range []struct {
		name, base, path, tok string
		code                  int
		body                  func(string) bool
	}{
		{"valid", strict, "/ada.json", good.token(t, claimsFor("ada", now, nil)), 200, is("null")},
		{"valid, another uid", strict, "/ada.json", good.token(t, claimsFor("bob", now, nil)), 401, is(denied)},
		{"expired", strict, "/ada.json", good.token(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["exp"] = now.Add(-time.Minute).Unix()
		})), 401, is("{\n  \"error\" : \"Auth token is expired\"\n}\n")},
		{"issued in the future", strict, "/ada.json", good.token(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["iat"] = now.Add(time.Hour).Unix()
		})), 401, parse("")},
		{"wrong audience", strict, "/ada.json", good.token(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["aud"] = "another-project"
		})), 401, parse("aud")},
		{"wrong issuer", strict, "/ada.json", good.token(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["iss"] = "https://issuer.invalid/another-project"
		})), 401, parse("issuer")},
		{"no sub", strict, "/ada.json", good.token(t, claimsFor("", now, nil)), 401, parse("sub")},
		{"bad signature", strict, "/ada.json", other.token(t, claimsFor("ada", now, nil)), 401, parse("signature")},
		{"unknown kid", strict, "/ada.json", signer{ka, "k9"}.token(t, claimsFor("ada", now, nil)), 401, parse("k9")},
		{"garbage", strict, "/ada.json", "not-a-token", 401, parse("")},
		{"unsigned, no emulator", strict, "/ada.json", unsigned(t, claimsFor("ada", now, nil)), 401, parse("")},
		{"unsigned, emulator", emu, "/ada.json", unsigned(t, claimsFor("ada", now, nil)), 200, is("null")},
		// The JS SDK's mockUserToken: iat 0, exp 3600, another project; the emulator takes it.
		{"unsigned mock token, emulator", emu, "/ada.json", unsigned(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["iat"], c["exp"], c["auth_time"], c["aud"] = 0, 3600, 0, "demo-other"
		})), 200, is("null")},
		{"the same mock token again (cached)", emu, "/ada.json", unsigned(t, claimsFor("ada", now, func(c jwt.MapClaims) {
			c["iat"], c["exp"], c["auth_time"], c["aud"] = 0, 3600, 0, "demo-other"
		})), 200, is("null")},
		{"unsigned without sub, emulator", emu, "/ada.json", unsigned(t, claimsFor("", now, func(c jwt.MapClaims) {
			delete(c, "user_id")
		})), 401, parse("")},
		{"signed, emulator", emu, "/ada.json", good.token(t, claimsFor("ada", now, nil)), 200, is("null")},
		{"secret", strict, "/ada.json", "s2", 200, is("null")},
		{"owner, no emulator: no credential", strict, "/ada.json", "owner", 401, is(denied)},
		{"owner, no emulator, public path", strict, "/open.json", "owner", 200, is("null")},
		{"owner, emulator: admin", emu, "/ada.json", "owner", 200, is("null")},
		{"none", strict, "/ada.json", "", 401, is(denied)},
	} {
		var r reply
		if c.tok == "" {
			r = do(t, "GET", c.base+c.path, "")
		} else {
			r = do(t, "GET", c.base+c.path, "", "Authorization", "Bearer "+c.tok)
		}
		if r.code != c.code || !c.body(r.body) {
			t.Errorf("%s: %d %q, want %d", c.name, r.code, r.body, c.code)
		}
	}
}

func TestVerifyTokenExpiry(t *testing.T) {
	ka, _ := testKeys(t)
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{"http://127.0.0.1:1"}
	cfg.Security = auth.Security{ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exp := cfg.Now().Add(30 * time.Minute).Truncate(time.Second)
	tok := signer{ka, "k1"}.token(t, claimsFor("ada", cfg.Now(), func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	for range 2 { // verified, then from the cache
		a, err := s.VerifyToken(tok)
		if err != nil || a.UID != "ada" || a.Provider != "password" || !a.Expires.Equal(exp) || a.Claims["email_verified"] != true {
			t.Fatalf("VerifyToken: %+v, %v", a, err)
		}
	}
	clock.Store(exp.Add(time.Second).UnixNano()) // a cached token expires too
	var ae *auth.AuthError
	if _, err := s.VerifyToken(tok); !errors.As(err, &ae) || ae.Msg != "Auth token is expired" {
		t.Fatalf("after exp: %v", err)
	}
}

func TestBadSecurityConfig(t *testing.T) {
	for _, c := range []struct {
		sec  auth.Security
		want string
	}{
		{auth.Security{RulesFile: writeFile(t, "r.json", "{\"rules\": {\n  \".read\": \"auth.uid ==\"\n}}")}, "line 2, column 24"},
		{auth.Security{RulesFile: "/nonexistent/rules.json"}, "rules"},
		{auth.Security{JWTKeysFile: writeFile(t, "k.json", `{"keys":[]}`)}, "--project-id"},
		{auth.Security{ProjectID: "p", JWTKeysFile: writeFile(t, "k.pem", "not pem")}, "no PEM block"},
		{auth.Security{ProjectID: "p", JWTKeysFile: writeFile(t, "k.json", `{"keys":[{"kty":"EC","kid":"x"}]}`)}, "only RSA"},
	} {
		cfg := DefaultConfig()
		cfg.Security = c.sec
		s, err := New(cfg)
		if err == nil {
			s.Close()
			t.Errorf("%+v: no error", c.sec)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want it to mention %q", c.sec, err, c.want)
		}
	}
}

// startRTDBOn starts a realtime database on the given kv.
func startRTDBOn(t testing.TB, kvURL string, edit func(*Config)) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvURL}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

func TestSettingsRulesRoundTripAcrossServers(t *testing.T) {
	kvURL := kvtest.URL(t)
	sec := func(c *Config) { c.Security = auth.Security{AuthSecrets: []string{"adm"}} }
	edge, cloud := startRTDBOn(t, kvURL, sec), startRTDBOn(t, kvURL, func(c *Config) {
		c.Security = auth.Security{Emulator: true}
	})
	// No rules: everything allowed, and GET says so.
	if r := do(t, "PUT", edge+"/a.json?ns=db1", `1`); r.code != 200 {
		t.Fatalf("write without rules: %d %s", r.code, r.body)
	}
	if r := do(t, "GET", edge+"/.settings/rules.json?ns=db1&auth=adm", ""); r.code != 200 || r.body != rest.DefaultRules {
		t.Fatalf("default rules: %d %q", r.code, r.body)
	}
	// Only admins see or change rules.
	if r := do(t, "GET", edge+"/.settings/rules.json?ns=db1", ""); r.code != 401 || r.body != denied {
		t.Fatalf("rules read without admin: %d %q", r.code, r.body)
	}
	if r := do(t, "PUT", cloud+"/.settings/rules.json?ns=db1", `{"rules":{}}`, "Authorization", "Bearer nobody"); r.code != 401 {
		t.Fatalf("rules written with a bad credential: %d %q", r.code, r.body)
	}
	// A bad file: 400 naming line and column.
	r := do(t, "PUT", edge+"/.settings/rules.json?ns=db1&auth=adm", "{\"rules\": {\n  \".write\": \"newData.val() >\"\n}}")
	if r.code != 400 || !strings.Contains(r.body, "line 2, column 29") {
		t.Fatalf("bad rules: %d %s", r.code, r.body)
	}
	// Set on the edge (a secret), read back and enforced on the cloud (emulator owner), and the
	// other database untouched.
	rulesText := "{\"rules\": {\".read\": true, \"a\": {\".write\": \"newData.val() > data.val()\"}}}"
	if r := do(t, "PUT", edge+"/.settings/rules.json?ns=db1&auth=adm", rulesText); r.code != 200 || r.body != `{"status":"ok"}` {
		t.Fatalf("PUT rules: %d %s", r.code, r.body)
	}
	if r := do(t, "GET", cloud+"/.settings/rules.json?ns=db1", "", "Authorization", "Bearer owner"); r.code != 200 || r.body != rulesText {
		t.Fatalf("GET rules on the other server: %d %q", r.code, r.body)
	}
	for _, base := range []string{edge, cloud} {
		if r := do(t, "PUT", base+"/a.json?ns=db1", `0`); r.code != 401 || r.body != denied {
			t.Errorf("%s: decreasing write: %d %q", base, r.code, r.body)
		}
		if r := do(t, "PUT", base+"/b.json?ns=db1", `0`); r.code != 401 {
			t.Errorf("%s: write without a grant: %d %q", base, r.code, r.body)
		}
		if r := do(t, "PUT", base+"/b.json?ns=db2", `0`); r.code != 200 {
			t.Errorf("%s: db2 has no rules: %d %q", base, r.code, r.body)
		}
	}
	if r := do(t, "PUT", cloud+"/a.json?ns=db1", `2`); r.code != 200 {
		t.Errorf("increasing write: %d %q", r.code, r.body)
	}
	if r := do(t, "PUT", edge+"/a.json?ns=db1", `3`); r.code != 200 {
		t.Errorf("increasing write on the edge: %d %q", r.code, r.body)
	}
	// Replaced again: the next request on either server sees the new rules.
	if r := do(t, "PUT", cloud+"/.settings/rules.json?ns=db1", `{"rules": {".read": false}}`, "Authorization", "Bearer owner"); r.code != 200 {
		t.Fatalf("PUT rules: %d %s", r.code, r.body)
	}
	if r := do(t, "GET", edge+"/a.json?ns=db1", ""); r.code != 401 {
		t.Errorf("read after the rules changed: %d %q", r.code, r.body)
	}
	if r := do(t, "GET", edge+"/a.json?ns=db1&auth=adm", ""); r.code != 200 || r.body != "3" {
		t.Errorf("admin read: %d %q", r.code, r.body)
	}
}

// TestWriteRulesSeeTheWritesSnapshot shows that a write is judged on the data its Txn is guarded
// on: a rule reading a key outside the written path, changed between the write's read and its
// commit, makes the write retry and be judged again.
func TestWriteRulesSeeTheWritesSnapshot(t *testing.T) {
	kvURL := kvtest.URL(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{kvURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var armed atomic.Bool
	base := startRTDBOn(t, kvURL, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "r.json", `{"rules": {"doc": {".write": "root.child('open').val() === true"}}}`),
			AuthSecrets: []string{"adm"}}
		c.Now = func() time.Time {
			if armed.CompareAndSwap(true, false) { // after the write read its snapshot, before it commits
				if _, err := cli.Put(context.Background(), "/rtdb/default/open", "false"); err != nil {
					t.Error(err)
				}
			}
			return time.Now()
		}
	})
	if r := do(t, "PUT", base+"/open.json?auth=adm", `true`); r.code != 200 {
		t.Fatal(r.body)
	}
	if r := do(t, "PUT", base+"/doc.json", `1`); r.code != 200 {
		t.Fatalf("open: %d %s", r.code, r.body)
	}
	armed.Store(true)
	if r := do(t, "PUT", base+"/doc.json", `2`); r.code != 401 {
		t.Fatalf("closed between read and commit: %d %s, want 401", r.code, r.body)
	}
	if armed.Load() {
		t.Fatal("the hook did not run")
	}
	if r := do(t, "GET", base+"/doc.json?auth=adm", ""); r.code != 200 || r.body != "1" {
		t.Errorf("doc: %d %s, want 1", r.code, r.body)
	}
}

// TestStreamReadAuth is the check SSE listeners call before subscribing: allowed or not, the
// token's expiry, and a bad credential as an *auth.AuthError.
func TestStreamReadAuth(t *testing.T) {
	ka, _ := testKeys(t)
	cfg := DefaultConfig()
	cfg.KVEndpoints = []string{kvtest.URL(t)}
	cfg.Security = auth.Security{RulesFile: writeFile(t, "rules.json", docRules), AuthSecrets: []string{"s3cret"},
		ProjectID: project, JWTKeysFile: jwks(t, ka, "k1")}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	ada := signer{ka, "k1"}.token(t, claimsFor("ada", time.Now(), func(c jwt.MapClaims) { c["exp"] = exp.Unix() }))
	for _, c := range []struct {
		name, query, path string
		allowed           bool
		expires           time.Time
		authErr           bool
	}{
		{"own", "auth=" + ada, "users/ada", true, exp, false},
		{"below own", "auth=" + ada, "users/ada/name", true, exp, false},
		{"another's", "auth=" + ada, "users/bob", false, time.Time{}, false},
		{"above", "auth=" + ada, "users", false, time.Time{}, false},
		{"anonymous", "", "users/ada", false, time.Time{}, false},
		{"public", "", "posts", true, time.Time{}, false},
		{"secret", "auth=s3cret", "admins", true, time.Time{}, false},
		{"bad token", "auth=x.y.z", "posts", false, time.Time{}, true},
	} {
		r := httptest.NewRequest("GET", "/"+c.path+".json?"+c.query, nil)
		ok, e, err := s.StreamReadAuth(r, "default", strings.Split(c.path, "/"))
		var ae *auth.AuthError
		if ok != c.allowed || !e.Equal(c.expires) || errors.As(err, &ae) != c.authErr || (err != nil && !c.authErr) {
			t.Errorf("%s: %v %v %v", c.name, ok, e, err)
		}
	}
}
