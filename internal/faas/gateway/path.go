package gateway

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The path rule: the gateway routes by the path as the client escaped it, and what it forwards
// is never re-interpreted after routing.
//
// The function's name is the first segment of the escaped path after /function/ (so an encoded
// slash, %2F, cannot move the boundary between name and rest: "pub%2Fx" names no function), and
// the rest is forwarded with its escaping unchanged (an instance sees %2F where the client sent
// it), below the instance's base URL. A rest with a dot segment, "." or "..", once decoded and
// split at '/' or '\' (and with a ";params" suffix dropped, as Tomcat reads "..;"), is refused with
// 400: an instance, or a server behind a base path such as url=http://h/base, that resolves dot
// segments itself would otherwise take /base/../other for /other, a path the gateway never
// routed, possibly another function behind its key. net/http's ServeMux and OpenFaaS' gateway
// (gorilla/mux) never forward a dot segment either: they redirect to the cleaned path, which for
// an encoded "..%2F" lies outside /function/NAME, so a redirect would point nowhere useful.
//
// Servers that read a segment differently count too: a segment made only of dots and what some
// server takes for a dot is refused as well, once NUL, white space and control characters are
// removed (C servers stop at NUL: "..%00"; some trim or drop controls): overlong UTF-8 dots
// (%C0%AE, %E0%80%AE, which old decoders read as '.'), dots that NFKC normalisation turns into
// '.' or ".." (U+2024, U+2025, U+FE52, U+FF0E) and a dot still encoded (%2E, for a server that
// decodes twice). No real segment is made of those alone.

// functionPath splits an escaped request path /function/NAME[/REST] into the function's name
// and the path to forward, decoded (path) and as the client escaped it (rawPath). err says why a
// path is refused (400).
func functionPath(u *url.URL) (name, path, rawPath string, err error) {
	rest := strings.TrimPrefix(u.EscapedPath(), "/function/")
	escName, escSub, _ := strings.Cut(rest, "/")
	if name, err = url.PathUnescape(escName); err != nil {
		return "", "", "", fmt.Errorf("function name %q: %v", escName, err)
	}
	rawPath = "/" + escSub
	if path, err = url.PathUnescape(rawPath); err != nil {
		return "", "", "", fmt.Errorf("path %q: %v", rawPath, err)
	}
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." || dotLike(seg) {
			return "", "", "", fmt.Errorf("path %q after /function/%s: dot segments (%q), encoded or not, are not forwarded: "+
				"the function's server would resolve them to a path the gateway did not route; send the path without them", rawPath, name, seg)
		}
	}
	return name, path, rawPath, nil
}

// dotEquivalents are what some server reads as one dot (or, U+2025, two).
var dotEquivalents = []string{".", "\xc0\xae", "\xe0\x80\xae", "\u2024", "\u2025", "\ufe52", "\uff0e", "%2e", "%2E"}

// dotLike reports whether a decoded segment, NUL, white space and control characters removed,
// is made only of dot equivalents.
func dotLike(seg string) bool {
	// Byte by byte where the text is not UTF-8 (strings.Map would turn the bytes of an overlong
	// dot into U+FFFD).
	var b strings.Builder
	for i := 0; i < len(seg); {
		r, n := utf8.DecodeRuneInString(seg[i:])
		if !(r <= ' ' || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r)) || (r == utf8.RuneError && n == 1) {
			b.WriteString(seg[i : i+n])
		}
		i += n
	}
	seg = b.String()
	if seg == "" {
		return false
	}
	for seg != "" {
		n := len(seg)
		for _, d := range dotEquivalents {
			if strings.HasPrefix(seg, d) {
				seg = seg[len(d):]
				break
			}
		}
		if len(seg) == n {
			return false
		}
	}
	return true
}
