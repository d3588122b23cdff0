// Package version holds the build identity of the continuum binary, set at link time.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Commit are overridden with -ldflags "-X" by the Makefile.
var (
	Version = "0.1.0-dev"
	Commit  = ""
)

// Revision is the commit this binary was built from: Commit when the Makefile set it, else the
// VCS revision the go command stamped (shortened to 12 digits, "-dirty" when the tree had
// uncommitted changes), else "".
func Revision() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(len(rev), 12)] + dirty
}

// String renders the version line printed by `continuum version`.
func String() string {
	c := Revision()
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("continuum %s (commit %s, %s, %s/%s)", Version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
