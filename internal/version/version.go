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

// String renders the version line printed by `continuum version`.
func String() string {
	c := Commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("continuum %s (commit %s, %s, %s/%s)", Version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
