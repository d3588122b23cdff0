package rtdb

import (
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSDKRules runs testdata/auth_sdk_rules.mjs: the official Firebase JS SDK under Node, with
// connectDatabaseEmulator's mockUserToken, against a server enforcing the documentation's rules
// in emulator mode: own data allowed, another user's and invalid values denied
// (PERMISSION_DENIED), a listener on a denied path cancelled, an unauthenticated client denied.
func TestSDKRules(t *testing.T) {
	node, modules := sdkModules(t)
	base := startRTDB(t, func(c *Config) {
		c.Security = Security{RulesFile: writeFile(t, "rules.json", docRules), Emulator: true}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/auth_sdk_rules.mjs", modules, u.Hostname(), u.Port(), "rules-test")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "FAIL") {
			t.Error(line)
		} else {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatalf("node testdata/auth_sdk_rules.mjs: %v", err)
	}
	if !strings.Contains(string(out), "ok an unauthenticated client") {
		t.Fatal("the script did not run its checks")
	}
}
