package bridge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/stream/bridge"
)

func postAuth(t *testing.T, url, auth, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestTokenRequired: a bridge with a token answers every post without it 401, before it looks
// at the topic or the body, and writes nothing to Kafka (the first post with the token lands at
// offset 0); /healthz stays open.
func TestTokenRequired(t *testing.T) {
	k := kafka.Broker(t, baselines.KafkaTopic{Name: "auth", Partitions: 1, Replication: 1})
	const token = "0123456789abcdef0123456789abcdef01234567"
	url := startBridge(t, func(c *bridge.Config) { c.Brokers = k.Target.Endpoints; c.Token = token })
	for _, c := range []struct{ path, auth, body string }{
		{"/topics/auth", "", `{"id":"a"}`},
		{"/topics/auth", "Bearer " + token[:39], `{"id":"a"}`},
		{"/topics/auth", "Bearer " + token + "0", `{"id":"a"}`},
		{"/topics/auth", "Basic " + token, `{"id":"a"}`},
		{"/topics/auth", token, `{"id":"a"}`},
		{"/topics/auth?token=" + token, "", `{"id":"a"}`},
		{"/topics/missing", "", `{"id":"a"}`},
		{"/topics/auth", "Bearer nope", `not json`},
		{"/topics/b%20d", "", `{"id":"a"}`},
	} {
		code, body, h := postAuth(t, url+c.path, c.auth, c.body)
		var e struct{ Error string }
		if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer ") ||
			json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "Authorization: Bearer") {
			t.Errorf("POST %s with %q: %d %s, want 401 with a Bearer challenge", c.path, c.auth, code, body)
		}
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Error("/healthz asks for the token; it stays open")
	}
	code, body, _ := postAuth(t, url+"/topics/auth", "bearer "+token, `{"id":"a"}`)
	var rep struct{ Offsets []bridge.Offset }
	if code != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Offsets) != 1 {
		t.Fatalf("post with the token: %d %s", code, body)
	}
	if rep.Offsets[0].Offset != 0 {
		t.Errorf("the first post with the token landed at offset %d: the refused posts wrote %d records", rep.Offsets[0].Offset, rep.Offsets[0].Offset)
	}
}

// TestRunRefusesOpenPublicBind: without a token the bridge listens on loopback only.
func TestRunRefusesOpenPublicBind(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		cfg := bridge.DefaultConfig()
		cfg.ListenAddr, cfg.Brokers = addr, []string{deadAddr(t)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := bridge.Run(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "reachable from other machines") {
			t.Errorf("Run on %s without a token: %v, want a refusal", addr, err)
		}
	}
	cfg := bridge.DefaultConfig()
	cfg.ListenAddr, cfg.Brokers = "127.0.0.1:0", []string{deadAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bridge.Run(ctx, cfg); err != nil {
		t.Errorf("Run on loopback without a token: %v", err)
	}
}
