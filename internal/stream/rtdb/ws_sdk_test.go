package rtdb

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sdkModules returns the node_modules directory holding the npm firebase package make setup
// installed (tools/npm-firebase), and the node binary. The test is skipped only when node is
// absent; a missing package is a failure naming the command that installs it.
func sdkModules(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the Firebase JS SDK tests need Node.js >= 20 (make setup checks for it)")
	}
	if d := os.Getenv("CONTINUUM_NPM_FIREBASE"); d != "" {
		return node, filepath.Join(d, "node_modules")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
	modules = filepath.Join(dir, ".tools", "npm-firebase", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "firebase", "package.json")); err != nil {
		t.Fatalf("the npm firebase package is not installed in %s: run make setup (or tools/npm-firebase/install.sh)", modules)
	}
	return node, modules
}

// TestSDKOverWebSocket runs testdata/sdk_test.mjs: the official Firebase JS SDK under Node,
// connected with connectDatabaseEmulator to a realtime-db on a real kv, doing set, update,
// push, remove, get, onValue, onChild*, a query, two clients, 10 concurrent transactions and
// onDisconnect.
func TestSDKOverWebSocket(t *testing.T) {
	runSDKScript(t, startRTDB(t, nil), "testdata/sdk_test.mjs", "sdk-test", "ok runTransaction")
}

// runSDKScript runs a Node script that drives the real Firebase JS SDK against the realtime-db
// at base (database ns): its "FAIL" lines fail the test, the others are logged, and it must exit
// 0 having printed done (so a script that stopped early cannot pass).
func runSDKScript(t *testing.T, base, script, ns, done string) {
	t.Helper()
	node, modules := sdkModules(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, modules, u.Hostname(), u.Port(), ns)
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
		t.Fatalf("node %s: %v", script, err)
	}
	if !strings.Contains(string(out), done) {
		t.Fatalf("node %s did not run its checks (no %q)", script, done)
	}
}
