package rtdb

import (
	"testing"
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
	right := sdkHash(leaf(`"hunter2"`))
	wrong := sdkHash(leaf(`"hunter3"`))
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
	if s, _ := w.do("p", map[string]any{"p": "/pub/n", "d": 2, "h": sdkHash(leaf("5"))}); s != "datastale" {
		t.Fatalf("allowed transaction with a stale hash: %s", s)
	}
	if s, _ := w.do("p", map[string]any{"p": "/pub/n", "d": 2, "h": sdkHash(leaf("1"))}); s != "ok" {
		t.Fatalf("allowed transaction: %s", s)
	}
}
