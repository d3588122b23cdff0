package rtdb

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// sdkHash is the hash the Firebase JS SDK computes over a node (LeafNode.hash and
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
//     children whose hash is not empty, in Firebase's key order (32-bit integer keys first,
//     numerically, then the others as strings); "" when that concatenation is empty.
//
// Arrays are objects keyed "0", "1", ... in both the SDK and the store, so they need no case.
func sdkHash(t any) string {
	switch x := t.(type) {
	case leaf:
		return sha1Base64(leafHashText(x))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareKeys)
		var b strings.Builder
		for _, k := range keys {
			if h := sdkHash(x[k]); h != "" {
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

func leafHashText(l leaf) string {
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
	// The SDK emits the low 52 bits of f and the low 11 bits of e one by one (f % 2, then
	// floor(f / 2)); for non-negative integral doubles below 2^53 that is the binary form of
	// their integer value, kept to its field's width.
	var bits uint64
	fi := uint64(math.Mod(f, math.Pow(2, fbits)))
	if f < 0 { // a one-off logarithm can make f negative: JS's f % 2 is then -1 or -0
		fi = jsLowBits(f, fbits)
	}
	ei := uint64(math.Mod(e, math.Pow(2, ebits)))
	bits = fi | ei<<fbits
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

// jsLowBits repeats the SDK's loop for a negative f: bit = (f % 2 != 0), f = floor(f / 2).
func jsLowBits(f float64, n int) uint64 {
	var out uint64
	for i := 0; i < n; i++ {
		if math.Mod(f, 2) != 0 {
			out |= 1 << i
		}
		f = math.Floor(f / 2)
	}
	return out
}
