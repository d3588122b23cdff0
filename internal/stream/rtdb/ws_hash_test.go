package rtdb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
	"github.com/continuum-project/continuum/internal/stream/rtdb/ws"
)

// TestSDKHashMatchesSDK compares ws.Hash with the hash the Firebase JS SDK itself computes
// (testdata/hash_oracle.mjs) for values that exercise each part of its definition: numbers
// of every exponent (where the SDK's logarithm is one off, or its scaling overflows, its bits
// are not IEEE's), random doubles, integers, strings beyond the BMP, booleans, and objects
// whose keys sort differently in the SDK (leading zeros, negative numbers) and in Go.
func TestSDKHashMatchesSDK(t *testing.T) {
	node, modules := sdkModules(t)
	base := startRTDB(t, nil)
	u, _ := url.Parse(base)

	var values []any
	for e := -1074; e <= 1023; e += 7 {
		values = append(values, math.Ldexp(1, e), -math.Ldexp(1.5, e-1))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for len(values) < 800 {
		f := math.Float64frombits(r.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			values = append(values, f)
		}
	}
	values = append(values, 0, 1, -1, 0.1, 1e-300, 5e-324, math.MaxFloat64, 1<<53, 1<<31, 123456789012, 1.0/3,
		"", "hi", "é😀", "\uffff\U0001F600", true, false,
		map[string]any{"b": "x", "a": map[string]any{"c": true}},
		map[string]any{"10": 1, "9": 2, "a": 3, "-1": 4, "01": 5, "1": 6, "0010": 7, "-0": 8, "2147483648": 9, "\uffff": 10, "😀": 11},
		[]any{1, 2, 3}, map[string]any{"x": map[string]any{"y": map[string]any{"z": 0.25}}})
	in, _ := json.Marshal(values)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/hash_oracle.mjs", modules, u.Hostname(), u.Port(), "hash")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hash_oracle.mjs: %v\n%s", err, out)
	}
	var want []string
	if err := json.Unmarshal(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:], &want); err != nil || len(want) != len(values) {
		t.Fatalf("oracle output (%v): %.500s", err, out)
	}
	bad := 0
	for i, v := range values {
		got := do(t, "GET", fmt.Sprintf("%s/h/%d.json?ns=hash", base, i), "")
		val, err := tree.ParseJSON([]byte(got.body))
		if err == nil {
			val, err = tree.Normalize(val, 2)
		}
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if h := ws.Hash(val); h != want[i] {
			bad++
			if bad <= 10 {
				vb, _ := json.Marshal(v)
				t.Errorf("value %s (stored %s): ws.Hash %q, the SDK's %q", vb, strings.TrimSpace(got.body), h, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d hashes differ", bad, len(values))
	}
}
