package tree

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Leaf is a JSON scalar's canonical text. A tree is a parsed value: nil (null), a Leaf,
// map[string]any (children; never empty) or a ServerValue (only in values to be written).
type Leaf string

// ServerValue is {".sv": "timestamp"} or {".sv": {"increment": n}}.
type ServerValue struct {
	timestamp bool
	inc       float64
	incInt    int64
	isInt     bool
}

// InvalidError is a value, path or query the database refuses: REST answers it with a 400 and
// its message, the WebSocket protocol with invalid_data.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// Invalid is an *InvalidError with a formatted message.
func Invalid(format string, a ...any) error {
	return &InvalidError{fmt.Sprintf(format, a...)}
}

// Increment says whether v is an increment (else it is the server's timestamp).
func (v ServerValue) Increment() bool { return !v.timestamp }

var errBadJSON = errors.New("Invalid data; couldn't parse JSON object, array, or value.")

// ParseJSON decodes one JSON value (and nothing after it) with numbers kept exact.
func ParseJSON(body []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, errBadJSON
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errBadJSON
	}
	return v, nil
}

// Normalize turns a decoded JSON value into a tree: arrays become objects keyed "0", "1", ...,
// nulls and empty objects vanish, ".value" unwraps, ".priority" is dropped, keys are validated,
// depth counts from the write's path depth.
func Normalize(v any, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("Data is too deep: more than %d levels of nesting", MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		if x {
			return Leaf("true"), nil
		}
		return Leaf("false"), nil
	case string:
		b, _ := json.Marshal(x)
		return Leaf(b), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("Invalid number %s", x)
		}
		return numberLeaf(f, string(x)), nil
	case []any:
		m := make(map[string]any, len(x))
		for i, e := range x {
			n, err := Normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			if n != nil {
				m[strconv.Itoa(i)] = n
			}
		}
		if len(m) == 0 {
			return nil, nil
		}
		return m, nil
	case map[string]any:
		if sv, ok := x[".sv"]; ok {
			if len(x) != 1 {
				return nil, errors.New("Invalid data: .sv must be the only key of its object")
			}
			return parseServerValue(sv)
		}
		if val, ok := x[".value"]; ok {
			for k := range x {
				if k != ".value" && k != ".priority" {
					return nil, errors.New("Invalid data: .value may only be beside .priority")
				}
			}
			return Normalize(val, depth)
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			if k == ".priority" {
				continue // priorities are not stored
			}
			if err := ValidateKey(k); err != nil {
				return nil, err
			}
			n, err := Normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			if n != nil {
				m[k] = n
			}
		}
		if len(m) == 0 {
			return nil, nil
		}
		return m, nil
	}
	return nil, errBadJSON
}

// numberLeaf renders a number canonically: integers within ±2^53 without a fraction or exponent.
func numberLeaf(f float64, orig string) Leaf {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return Leaf(strconv.FormatInt(int64(f), 10))
	}
	_ = orig
	return Leaf(strconv.FormatFloat(f, 'g', -1, 64))
}

func parseServerValue(sv any) (any, error) {
	switch x := sv.(type) {
	case string:
		if x == "timestamp" {
			return ServerValue{timestamp: true}, nil
		}
	case map[string]any:
		if n, ok := x["increment"].(json.Number); ok && len(x) == 1 {
			s := ServerValue{}
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				s.incInt, s.isInt, s.inc = i, true, float64(i)
				return s, nil
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				break
			}
			s.inc = f
			return s, nil
		}
	}
	return nil, errors.New("Invalid data: unsupported server value (.sv): want \"timestamp\" or {\"increment\": number}")
}

// Resolve replaces the server values of v (written at a path whose old value is old) by their
// values; consumed reports whether an old value was read (an increment).
func Resolve(v, old any, nowMs int64) (out any, consumed bool) {
	out, consumed, _ = ResolveAt(v, old, nowMs, nil)
	return out, consumed
}

// ResolveAt is resolve that also reports, as a 400 naming the node (at is the path below the
// write's location), an increment whose sum is not a finite number: JSON has no Inf or NaN, so
// such a leaf, once stored, would make every read at or above it unencodable. The tree it
// returns is complete either way (the bad sum as its Go rendering, which rules see as null), so
// a caller can judge the write by the rules first and report the error only to whom they allow.
func ResolveAt(v, old any, nowMs int64, at []string) (out any, consumed bool, err error) {
	switch x := v.(type) {
	case ServerValue:
		if x.timestamp {
			return Leaf(strconv.FormatInt(nowMs, 10)), false, nil
		}
		if l, ok := old.(Leaf); ok {
			if x.isInt {
				if i, err := strconv.ParseInt(string(l), 10, 64); err == nil {
					if s := i + x.incInt; (s > i) == (x.incInt > 0) || x.incInt == 0 {
						return numberLeaf(float64(s), ""), true, nil
					}
				}
			}
			if f, perr := strconv.ParseFloat(string(l), 64); perr == nil {
				sum := f + x.inc
				if math.IsInf(sum, 0) || math.IsNaN(sum) {
					err = Invalid("Invalid increment at /%s: %v + %v is %v, not a finite number (JSON numbers are finite doubles, at most ±%g)",
						strings.Join(at, "/"), string(l), x.inc, sum, math.MaxFloat64)
					return Leaf(strconv.FormatFloat(sum, 'g', -1, 64)), true, err
				}
				return numberLeaf(sum, ""), true, nil
			}
		}
		if x.isInt {
			return Leaf(strconv.FormatInt(x.incInt, 10)), true, nil
		}
		return numberLeaf(x.inc, ""), true, nil
	case map[string]any:
		om, _ := old.(map[string]any)
		m := make(map[string]any, len(x))
		for k, e := range x {
			r, c, e2 := ResolveAt(e, om[k], nowMs, append(at[:len(at):len(at)], k))
			consumed = consumed || c
			if err == nil {
				err = e2
			}
			m[k] = r
		}
		return m, consumed, err
	}
	return v, false, nil
}

// Flatten lists the leaves of t under key.
func Flatten(key string, t any, out map[string]string) {
	switch x := t.(type) {
	case Leaf:
		out[key] = string(x)
	case map[string]any:
		for k, e := range x {
			Flatten(key+"/"+k, e, out)
		}
	}
}

// Insert sets the leaf at rel (segments below the tree's root) in *root.
func Insert(root *any, rel []string, val Leaf) {
	if len(rel) == 0 {
		*root = val
		return
	}
	m, ok := (*root).(map[string]any)
	if !ok {
		m = map[string]any{}
		*root = m
	}
	child := m[rel[0]]
	Insert(&child, rel[1:], val)
	m[rel[0]] = child
}

// finiteLeaf is false for the renderings strconv gives Inf and NaN, which are not JSON. No write
// stores them (resolveAt refuses such sums, normalize such numbers); a kv written by an older
// server might hold one, and a read then treats it as null rather than failing whole.
func finiteLeaf(l Leaf) bool {
	return !(l == "+Inf" || l == "-Inf" || l == "NaN")
}

// Output converts a tree into what encoding/json writes as Firebase does: leaves as their JSON,
// objects whose keys are all array indexes (and at least half of the slots filled) as arrays.
func Output(t any) any {
	switch x := t.(type) {
	case nil:
		return nil
	case Leaf:
		if !finiteLeaf(x) { // written before increments were checked: read as absent, not as broken JSON
			return nil
		}
		return json.RawMessage(x)
	case map[string]any:
		maxIdx, isArr := -1, true
		for k := range x {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || strconv.Itoa(i) != k {
				isArr = false
				break
			}
			maxIdx = max(maxIdx, i)
		}
		if isArr && len(x) > 0 && maxIdx < 2*len(x) {
			arr := make([]any, maxIdx+1)
			for k, e := range x {
				i, _ := strconv.Atoi(k)
				arr[i] = Output(e)
			}
			return arr
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Output(e)
		}
		return m
	}
	return nil
}

// Encode writes t as JSON (keys sorted); pretty indents it.
func Encode(t any, pretty bool) []byte {
	var b []byte
	if pretty {
		b, _ = json.MarshalIndent(Output(t), "", "  ")
	} else {
		b, _ = json.Marshal(Output(t))
	}
	return b
}

// ETag is the standard base64 of the SHA-1 of a tree's canonical JSON.
func ETag(t any) string {
	sum := sha1.Sum(Canonical(t))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Canonical is the tree's JSON with keys sorted and no array conversion.
func Canonical(t any) []byte {
	var b strings.Builder
	var walk func(any)
	walk = func(t any) {
		switch x := t.(type) {
		case nil:
			b.WriteString("null")
		case Leaf:
			b.WriteString(string(x))
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				walk(x[k])
			}
			b.WriteByte('}')
		}
	}
	walk(t)
	return []byte(b.String())
}
