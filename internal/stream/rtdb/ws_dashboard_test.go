package rtdb

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns a headless-capable Chromium, skipping the test without one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not found; make setup installs it")
	return ""
}

// TestDashboardInChromium loads /.dashboard/ in headless Chromium — the page runs the real
// Firebase JS SDK's browser modules served by the realtime database — and checks that records
// written through REST appear, change and disappear on the page.
func TestDashboardInChromium(t *testing.T) {
	bin := chromium(t)
	_, modules := sdkModules(t)
	base := startRTDB(t, func(c *Config) { c.FirebaseSDKDir = filepath.Join(modules, "firebase") })
	do(t, "PUT", base+"/records/r0.json?ns=dash", `{"id":"r0","user":0,"seq":0}`)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute) // a deadline for a loaded machine, not a measure
	defer cancel()

	// waitFor polls a JavaScript condition in the page until it holds.
	waitFor := func(what, cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v; page text: %.2000s", what, err, body)
		}
	}
	rowHas := func(key, text string) string {
		return fmt.Sprintf(`(document.getElementById(%q)?.textContent || "").includes(%q)`, "row-"+key, text)
	}

	if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/.dashboard/?ns=dash&path=/records")); err != nil {
		t.Fatal(err)
	}
	waitFor("the page connects and shows the record written before it loaded",
		`document.getElementById("status").textContent === "connected" && `+rowHas("r0", `"user":0`))

	do(t, "PUT", base+"/records/r1.json?ns=dash", `{"id":"r1","user":1,"seq":1}`)
	waitFor("a record PUT through REST appears", rowHas("r1", `"seq":1`))

	do(t, "PATCH", base+"/records/r1.json?ns=dash", `{"seq":2}`)
	waitFor("a PATCHed record changes", rowHas("r1", `"seq":2`))

	var batch strings.Builder
	batch.WriteString("{")
	for i := 2; i < 22; i++ {
		if i > 2 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `"r%d":{"id":"r%d","user":%d,"seq":1}`, i, i, i)
	}
	batch.WriteString("}")
	do(t, "PATCH", base+"/records.json?ns=dash", batch.String())
	waitFor("20 records of one PATCH appear", `document.querySelectorAll("#rows tr").length === 22 && `+rowHas("r21", `"user":21`))

	do(t, "DELETE", base+"/records/r0.json?ns=dash", "")
	waitFor("a DELETEd record disappears", `!document.getElementById("row-r0") && document.getElementById("count").textContent === "21"`)
}

// TestDashboardServing checks the page's routes: the SDK's modules with their sibling imports
// made relative, and clear errors for anything else.
func TestDashboardServing(t *testing.T) {
	_, modules := sdkModules(t)
	base := startRTDB(t, func(c *Config) { c.FirebaseSDKDir = filepath.Join(modules, "firebase") })
	if r := do(t, "GET", base+"/.dashboard/", ""); r.code != 200 || !strings.Contains(r.body, `import { initializeApp } from "./sdk/firebase-app.js"`) {
		t.Fatalf("page: %d %.200s", r.code, r.body)
	}
	// An absolute import of a sibling SDK module, as package ws rewrites them.
	sdkImport := regexp.MustCompile(`"https://[^"\s]+/(firebase-[a-z-]+\.js)"`)
	r := do(t, "GET", base+"/.dashboard/sdk/firebase-database.js", "")
	if r.code != 200 || !strings.Contains(r.body, `from"./firebase-app.js"`) || sdkImport.MatchString(r.body) {
		t.Fatalf("database module: %d, relative import: %v, absolute left: %q", r.code,
			strings.Contains(r.body, `from"./firebase-app.js"`), sdkImport.FindString(r.body))
	}
	if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("module content type %q, want text/javascript", ct)
	}
	for _, p := range []string{"/.dashboard/sdk/../../etc/passwd", "/.dashboard/sdk/package.json", "/.dashboard/other"} {
		if r := do(t, "GET", base+p, ""); r.code != http.StatusNotFound || !strings.Contains(r.body, "dashboard") {
			t.Errorf("GET %s: %d %s, want 404 naming what is served", p, r.code, r.body)
		}
	}
	nodir := startRTDB(t, func(c *Config) { c.FirebaseSDKDir = t.TempDir() })
	if r := do(t, "GET", nodir+"/.dashboard/sdk/firebase-app.js", ""); r.code != 404 || !strings.Contains(r.body, "continuum setup stream") {
		t.Errorf("missing SDK: %d %s, want 404 naming continuum setup stream", r.code, r.body)
	}
}
