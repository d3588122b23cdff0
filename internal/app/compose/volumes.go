package compose

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// volumeName is what a named volume may be called: Docker's volume name characters
// (moby's RestrictedNameChars, [a-zA-Z0-9][a-zA-Z0-9_.-]). Docker Compose prefixes the project's
// name ("<project>_<name>"), so a one-character name is fine there and is here; what matters
// here is that the name is one directory under the instance's volumes/: never "", "." or "..",
// never a path.
var volumeName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// anonymousVolume names the directory of an anonymous volume mounted at target: Docker gives
// each its own volume, so the name is the target made readable plus a hash of the target itself
// ("/a/b" and "/a_b" read alike but hash apart). It cannot collide with a named volume: named
// ones cannot contain '@'.
func anonymousVolume(target string) string {
	sum := sha256.Sum256([]byte(target))
	readable := strings.NewReplacer("/", "_").Replace(strings.Trim(target, "/"))
	if len(readable) > 64 {
		readable = readable[:64]
	}
	return "anonymous-" + readable + "@" + hex.EncodeToString(sum[:6])
}
