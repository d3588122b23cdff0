package tree

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Limits of Firebase's REST API that the server enforces.
const (
	MaxKeyBytes = 768 // a key's UTF-8 length
	MaxDepth    = 32  // path segments plus nesting of the written value
)

// ValidateKey reports whether k may name a child: not empty, at most MaxKeyBytes bytes, valid
// UTF-8, none of . $ # [ ] / and no ASCII control character.
func ValidateKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("Invalid key: empty keys are not allowed")
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("Invalid key: key is longer than %d bytes", MaxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("Invalid key %q: not valid UTF-8", k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(".$#[]/", c) >= 0 {
			return fmt.Errorf("Invalid key %q: keys must not contain '.', '$', '#', '[', ']', '/' or ASCII control characters", k)
		}
	}
	return nil
}

// ParsePath splits a slash-separated path ("/a/b", "a//b/", "") into its validated segments;
// empty segments are ignored, as Firebase does. Segments are taken as they are (unescaped).
func ParsePath(p string) ([]string, error) {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "" {
			continue
		}
		if err := ValidateKey(s); err != nil {
			return nil, err
		}
		segs = append(segs, s)
	}
	if len(segs) > MaxDepth {
		return nil, fmt.Errorf("Path is too deep: more than %d segments", MaxDepth)
	}
	return segs, nil
}

// ParseURLPath parses a request's escaped URL path ("/users/ada%20l.json"): the ".json" suffix
// is optional, each segment is percent-decoded after splitting (so "%2F" cannot smuggle a slash
// into a key) and validated.
func ParseURLPath(escaped string) ([]string, error) {
	escaped = strings.TrimSuffix(escaped, ".json")
	var segs []string
	for _, s := range strings.Split(escaped, "/") {
		if s == "" {
			continue
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, fmt.Errorf("Invalid path: %v", err)
		}
		if err := ValidateKey(u); err != nil {
			return nil, err
		}
		segs = append(segs, u)
	}
	if len(segs) > MaxDepth {
		return nil, fmt.Errorf("Path is too deep: more than %d segments", MaxDepth)
	}
	return segs, nil
}

// ValidNamespace: Firebase database names are lowercase letters, digits and hyphens.
func ValidNamespace(ns string) bool {
	if ns == "" || len(ns) > 128 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
