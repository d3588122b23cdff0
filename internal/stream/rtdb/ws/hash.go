package ws

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/continuum-project/continuum/internal/stream/rtdb/tree"
)

// Hash is the hash the Firebase JS SDK computes over a node (LeafNode.hash and
// ChildrenNode.hash in its database package), which a transaction's put sends as "h": the
// server applies the put only while the value there still has that hash, else answers
// "datastale". The SDK's definition, restated (there are no priorities here, so their prefix is
// always empty):
//
//   - null (the empty node): "" — no SHA-1 at all;
//   - a leaf: base64(SHA-1(type + ":" + text)), type the JavaScript typeof ("string",
//     "number", "boolean"), text the string itself, "true"/"false", or for a number its
//     IEEE-754 bits as 16 lowercase hex digits computed the way the SDK computes them
//     (sdkDoubleHex);
//   - an object: base64(SHA-1(concatenation of ":" + key + ":" + hash(child))) over the
//     children whose hash is not empty, in the SDK's key order (sdkNameCompare); "" when that
//     concatenation is empty.
//
// Arrays are objects keyed "0", "1", ... in both the SDK and the store, so they need no case.
func Hash(t any) string {
	switch x := t.(type) {
	case tree.Leaf:
		return sha1Base64(leafHashText(x))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, sdkNameCompare)
		var b strings.Builder
		for _, k := range keys {
			if h := Hash(x[k]); h != "" {
				b.WriteString(":")
				b.WriteString(k)
				b.WriteString(":")
				b.WriteString(h)
			}
		}
		if b.Len() == 0 {
			return ""
		}
		return sha1Base64(b.String())
	}
	return ""
}

func sha1Base64(s string) string {
	sum := sha1.Sum([]byte(s)) // the SDK hashes the string's UTF-8 bytes, as Go holds it
	return base64.StdEncoding.EncodeToString(sum[:])
}

func leafHashText(l tree.Leaf) string {
	s := string(l)
	switch {
	case s == "true" || s == "false":
		return "boolean:" + s
	case len(s) > 0 && s[0] == '"':
		var str string
		if err := json.Unmarshal([]byte(s), &str); err != nil {
			str = s
		}
		return "string:" + str
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "string:" + s
	}
	return "number:" + sdkDoubleHex(f)
}

// sdkDoubleHex is the SDK's doubleToIEEE754String: the exponent from floor(log(v)/ln 2) and
// the fraction rounded with Math.round, packed as sign|exponent|fraction into 64 bits written
// as hex. For nearly every number this is math.Float64bits; it is restated step by step, not
// replaced by Float64bits, so that the rare values where the logarithm lands one off (and the
// SDK's bits differ from IEEE's) hash as the SDK hashes them.
func sdkDoubleHex(v float64) string {
	const ebits, fbits = 11, 52
	const bias = (1 << (ebits - 1)) - 1
	var s bool
	var e, f float64
	if v == 0 {
		s = math.Signbit(v)
	} else {
		s = v < 0
		v = math.Abs(v)
		if v >= math.Pow(2, 1-bias) {
			ln := math.Min(math.Floor(math.Log(v)/math.Ln2), bias)
			e = ln + bias
			f = jsRound(v*math.Pow(2, fbits-ln) - math.Pow(2, fbits))
		} else {
			f = jsRound(v / math.Pow(2, 1-bias-fbits))
		}
	}
	// The SDK emits the fields bit by bit: bit = (x % 2 is truthy), x = floor(x / 2). With the
	// logarithm one off, or for small numbers where 2^(52-ln) overflows to Infinity, f is not
	// a 52-bit integer (Infinity % 2 is NaN, a 0 bit): the loop is repeated as it is, not replaced
	// by a cast, which would differ exactly there.
	bits := jsLowBits(f, fbits) | jsLowBits(e, ebits)<<fbits
	if s {
		bits |= 1 << 63
	}
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		out[i] = hexdigits[bits&0xf]
		bits >>= 4
	}
	return string(out)
}

// jsRound is JavaScript's Math.round: halves round up (towards +Inf).
func jsRound(x float64) float64 { return math.Floor(x + 0.5) }

// jsLowBits repeats the SDK's loop: n times, bit = (x % 2 is truthy: neither 0 nor NaN),
// x = floor(x / 2); the first bit is the lowest. JavaScript's % on numbers is fmod, as math.Mod.
func jsLowBits(x float64, n int) uint64 {
	var out uint64
	for i := 0; i < n; i++ {
		if r := math.Mod(x, 2); r != 0 && !math.IsNaN(r) {
			out |= 1 << i
		}
		x = math.Floor(x / 2)
	}
	return out
}

// sdkNameCompare is the SDK's nameCompare: keys that tryParseInt reads as 32-bit integers
// (/^-?(0*)\d{1,10}$/ within range: leading zeros allowed, unlike the REST order's compareKeys)
// first, numerically, equal values by length; then the rest as JavaScript compares strings
// (by UTF-16 code units).
func sdkNameCompare(a, b string) int {
	if a == b {
		return 0
	}
	ai, aok := sdkTryParseInt(a)
	bi, bok := sdkTryParseInt(b)
	switch {
	case aok && bok:
		if ai != bi {
			return cmp.Compare(ai, bi)
		}
		return cmp.Compare(len(a), len(b))
	case aok:
		return -1
	case bok:
		return 1
	}
	return compareUTF16(a, b)
}

func sdkTryParseInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(strings.TrimLeft(digits, "0")) > 10 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(strings.TrimLeft(digits, "0")+"0", 10, 64) // x10: keeps "000" parseable
	if err != nil {
		return 0, false
	}
	n /= 10
	if len(digits) != len(s) {
		n = -n
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false
	}
	return n, true
}

// compareUTF16 orders strings as JavaScript's < does: by UTF-16 code units. It differs from
// Go's byte order only when a character above U+FFFF meets one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		if ra[i] == rb[i] {
			continue
		}
		return cmp.Compare(utf16First(ra[i]), utf16First(rb[i]))
	}
	return cmp.Compare(len(utf16.Encode(ra)), len(utf16.Encode(rb)))
}

func utf16First(r rune) uint16 {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return uint16(hi)
	}
	return uint16(r)
}
