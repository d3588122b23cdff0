package rtdb

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/kv/kvtest"
	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// BenchmarkRESTWriteRules measures one client's PUTs of a user-owned record over HTTP against a
// kv in this process, interleaving three servers on that kv request by request (so a busy
// machine slows all three alike): without rules (the default), with the documentation's rules
// and an ID token (a .write and three .validate rules evaluated inside the write's retry loop,
// the token verified on each request), and with the rules and a secret (rules bypassed). It
// reports the median latency of each and the ratios to "none"; the ratios are what carries to
// another machine.
func BenchmarkRESTWriteRules(b *testing.B) {
	ka, _ := testKeys(b)
	sg := signer{ka, "k1"}
	kvURL := kvtest.URL(b)
	rulesFile := writeFile(b, "rules.json", docRules)
	keys := jwks(b, ka, "k1")
	type target struct {
		name, base, cred string
		lat              []time.Duration
	}
	targets := []*target{
		{name: "none", base: startRTDBOn(b, kvURL, nil)},
		{name: "rules_idtoken", base: startRTDBOn(b, kvURL, func(c *Config) {
			c.Security = auth.Security{RulesFile: rulesFile, ProjectID: project, JWTKeysFile: keys}
		}), cred: sg.token(b, claimsFor("ada", time.Now(), nil))},
		{name: "rules_secret", base: startRTDBOn(b, kvURL, func(c *Config) {
			c.Security = auth.Security{RulesFile: rulesFile, AuthSecrets: []string{"s3cret"}}
		}), cred: "s3cret"},
	}
	i := 0
	for b.Loop() {
		for _, t := range targets {
			i++
			req, _ := http.NewRequest("PUT", t.base+"/users/ada.json",
				strings.NewReader(fmt.Sprintf(`{"name":"Ada","age":%d}`, i)))
			if t.cred != "" {
				req.Header.Set("Authorization", "Bearer "+t.cred)
			}
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			t.lat = append(t.lat, time.Since(start))
			if resp.StatusCode != 200 {
				b.Fatalf("%s: status %d", t.name, resp.StatusCode)
			}
		}
	}
	median := func(d []time.Duration) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)/2].Microseconds())
	}
	base := median(targets[0].lat)
	for _, t := range targets {
		m := median(t.lat)
		b.ReportMetric(m, "p50_us_"+t.name)
		if t != targets[0] {
			b.ReportMetric(m/base, "ratio_"+t.name)
		}
	}
}
