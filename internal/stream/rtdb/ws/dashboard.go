package ws

import (
	_ "embed"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/continuum-project/continuum/internal/stream/rtdb/rest"
	"github.com/continuum-project/continuum/internal/tools"
)

// The dashboard is a page served by the realtime database itself at /.dashboard/ that lists
// the records under a path live, through the official Firebase JS SDK in the browser
// (connectDatabaseEmulator to the server that served it, onChildAdded/Changed/Removed and
// onValue).
//
// The SDK comes from the npm `firebase` package `make setup` installs (pinned in
// tools/npm-firebase), served from its directory: the package ships the SDK's browser ES
// modules (firebase-app.js, firebase-database.js, ...) as Firebase publishes them for pages to
// import. Serving those files, rather than a bundle built at setup, keeps the page on exactly
// the code the Node tests run, needs no bundler, and works with no network: the only change is
// that the modules' imports of one another, which name Firebase's hosting by absolute URL, are
// rewritten to the sibling file served here.

// DashboardPath is where the dashboard and the SDK's modules are served.
const DashboardPath = "/.dashboard"

// DefaultFirebaseSDKDir is the npm firebase package of a clone after `make setup`, used when
// Config.FirebaseSDKDir is empty: looked up in the clone above the working directory or the
// executable, or in the setup cache (firebaseSDK).
const DefaultFirebaseSDKDir = ".tools/npm-firebase/node_modules/firebase"

// firebaseSDK is the npm firebase package `make setup` installed (internal/tools), else
// DefaultFirebaseSDKDir relative to the working directory (whose error then names it).
func firebaseSDK() string {
	if p, ok := tools.Find(tools.Tool{Path: "npm-firebase/node_modules/firebase", CacheDir: "npm-firebase-*", CacheRel: "node_modules/firebase"}); ok {
		return p
	}
	return DefaultFirebaseSDKDir
}

//go:embed web/dashboard.html
var dashboardHTML []byte

// sdkModule names the SDK's browser modules the dashboard may load.
var sdkModule = regexp.MustCompile(`^firebase-[a-z-]+\.js$`)

// sdkImport matches an absolute import of a sibling SDK module ("https://<host>/.../firebase-app.js").
var sdkImport = regexp.MustCompile(`"https://[^"\s]+/(firebase-[a-z-]+\.js)"`)

func (s *Server) ServeDashboard(w http.ResponseWriter, r *http.Request) {
	sub := strings.TrimPrefix(r.URL.Path, DashboardPath)
	switch {
	case sub == "":
		http.Redirect(w, r, DashboardPath+"/", http.StatusMovedPermanently)
	case sub == "/" || sub == "/index.html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(dashboardHTML)
	case strings.HasPrefix(sub, "/sdk/"):
		name := strings.TrimPrefix(sub, "/sdk/")
		if !sdkModule.MatchString(name) {
			rest.WriteError(w, http.StatusNotFound, "Not found: the dashboard serves /.dashboard/sdk/firebase-<module>.js only")
			return
		}
		dir := s.cfg.FirebaseSDKDir
		if dir == "" {
			dir = firebaseSDK()
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			rest.WriteError(w, http.StatusNotFound, "Firebase JS SDK module "+name+" not found in "+dir+
				": run continuum setup stream and start realtime-db with --firebase-sdk-dir <clone>/"+DefaultFirebaseSDKDir)
			return
		}
		if err != nil {
			rest.WriteError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write(sdkImport.ReplaceAll(b, []byte(`"./$1"`)))
	default:
		rest.WriteError(w, http.StatusNotFound, "Not found: the dashboard is at "+DashboardPath+"/")
	}
}
