package rtdb

import (
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
	"github.com/continuum-project/continuum/internal/testenv"
)

// TestWebSocketTransactionHashNeedsRules (issue 41, defect 17): a transaction's put (p with h)
// is judged by the rules before the hash is compared, so a caller who may not read the value
// gets permission_denied whether its guess is right or wrong; a caller who may write but not
// read is denied too (the compare would tell it whether the hidden value equals its guess).
func TestWebSocketTransactionHashNeedsRules(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	for _, p := range []string{"secret", "drop"} {
		if r := do(t, "PUT", base+"/"+p+".json?auth=s3cret", `"hunter2"`); r.code != 200 {
			t.Fatalf("admin put %s: %d %s", p, r.code, r.body)
		}
	}
	right := ws.Hash(tree.Leaf(`"hunter2"`))
	wrong := ws.Hash(tree.Leaf(`"hunter3"`))
	w := dialAuthWS(t, base, "default")
	for _, p := range []string{"/secret", "/drop"} {
		for _, h := range []string{right, wrong} {
			if s, d := w.do("p", map[string]any{"p": p, "d": "mine", "h": h}); s != "permission_denied" {
				t.Errorf("transaction put at %s with the %s hash: %s %v, want permission_denied",
					p, map[bool]string{true: "right", false: "wrong"}[h == right], s, d)
			}
		}
	}
	if r := do(t, "GET", base+"/.json?auth=s3cret", ""); r.body != `{"drop":"hunter2","secret":"hunter2"}` {
		t.Fatalf("after the denied transactions: %s", r.body)
	}
	// A caller who may read and write still gets datastale and ok.
	do(t, "PUT", base+"/pub/n.json", `1`)
	if s, _ := w.do("p", map[string]any{"p": "/pub/n", "d": 2, "h": ws.Hash(tree.Leaf("5"))}); s != "datastale" {
		t.Fatalf("allowed transaction with a stale hash: %s", s)
	}
	if s, _ := w.do("p", map[string]any{"p": "/pub/n", "d": 2, "h": ws.Hash(tree.Leaf("1"))}); s != "ok" {
		t.Fatalf("allowed transaction: %s", s)
	}
}

// TestWebSocketOnDisconnectCheckedAtRegistration (issue 41, defect 18): onDisconnect set and
// update are judged by the rules when they are registered, as Firebase does (the SDK's promise
// rejects); an allowed one runs at disconnect, a denied one never does.
func TestWebSocketOnDisconnectCheckedAtRegistration(t *testing.T) {
	base := startRevokeRTDB(t, nil, nil)
	w := dialAuthWS(t, base, "default")
	if s, _ := w.do("o", map[string]any{"p": "/secret/x", "d": "gone"}); s != "permission_denied" {
		t.Errorf("onDisconnect set on a denied path: %s, want permission_denied", s)
	}
	if s, _ := w.do("om", map[string]any{"p": "/", "d": map[string]any{"pub/a": 1, "secret/y": 2}}); s != "permission_denied" {
		t.Errorf("onDisconnect update with a denied path: %s, want permission_denied", s)
	}
	if s, _ := w.do("o", map[string]any{"p": "/pub/bye", "d": "gone"}); s != "ok" {
		t.Errorf("onDisconnect set on an allowed path: %s", s)
	}
	w.c.Close()
	var got string
	testenv.Eventually(t, 20*time.Second, "the allowed onDisconnect write", func() bool {
		got = do(t, "GET", base+"/.json?auth=s3cret", "").body
		return got != "null"
	})
	if got != `{"pub":{"bye":"gone"}}` {
		t.Fatalf("after disconnect: %s, want only the allowed write", got)
	}
}
