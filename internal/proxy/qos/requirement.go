package qos

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Requirement is one attribute constraint of a service's QoS, e.g. `accuracy >= 0.95`,
// `tier in [edge, fog]`, `gpu == true`. Instances' attributes are strings (discovery.Instance);
// comparisons are numeric when both sides parse as numbers, boolean when the wanted value is
// true/false, textual otherwise. An instance without the attribute never meets a requirement
// (not even `!=`): requirements are hard constraints, and an unknown value cannot be shown
// to satisfy one.
type Requirement struct {
	Attr   string
	Op     string   // one of ops
	Values []string // one value, or the list of `in`
}

var ops = []string{"==", "!=", "<=", ">=", "<", ">", "in"}

// maxRequirementLen bounds what ParseRequirement looks at; real requirements are short.
const maxRequirementLen = 1024

// ParseRequirement parses `ATTR OP VALUE` (OP one of ==, !=, <, <=, >, >=) or
// `ATTR in [V1, V2, ...]`. Values may be quoted ("..." or '...') and must be when they
// contain spaces, commas or brackets. Ordering operators need a number.
func ParseRequirement(s string) (Requirement, error) {
	var r Requirement
	fail := func(format string, args ...any) (Requirement, error) {
		q := s
		if len(q) > 80 {
			q = q[:80] + "..."
		}
		return Requirement{}, fmt.Errorf("requirement %q: %s", q, fmt.Sprintf(format, args...))
	}
	if len(s) > maxRequirementLen {
		return fail("longer than %d bytes", maxRequirementLen)
	}
	rest := strings.TrimSpace(s)
	i := 0
	for i < len(rest) && isAttrByte(rest[i], i == 0) {
		i++
	}
	if i == 0 {
		return fail("want ATTRIBUTE OP VALUE, e.g. \"accuracy >= 0.95\"; the attribute starts with a letter or '_'")
	}
	r.Attr, rest = rest[:i], strings.TrimLeft(rest[i:], " \t")
	for _, op := range ops {
		if !strings.HasPrefix(rest, op) {
			continue
		}
		if op == "in" && len(rest) > 2 && !isSpace(rest[2]) && rest[2] != '[' {
			continue
		}
		if after := rest[len(op):]; op != "in" && after != "" && strings.IndexByte("<>=!", after[0]) >= 0 {
			word, _, _ := strings.Cut(rest, " ")
			return fail("unknown operator %q; allowed: %s", word, strings.Join(ops, ", "))
		}
		r.Op, rest = op, strings.TrimSpace(rest[len(op):])
		break
	}
	if r.Op == "" {
		word := rest
		if j := strings.IndexAny(word, " \t"); j >= 0 {
			word = word[:j]
		}
		if word == "" {
			return fail("missing operator after %q; allowed: %s", r.Attr, strings.Join(ops, ", "))
		}
		return fail("unknown operator %q; allowed: %s", word, strings.Join(ops, ", "))
	}
	if r.Op == "in" {
		if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
			return fail("in: want a list such as [edge, fog]")
		}
		vals, err := splitList(rest[1 : len(rest)-1])
		if err != nil {
			return fail("in: %v", err)
		}
		if len(vals) == 0 {
			return fail("in: the list is empty")
		}
		r.Values = vals
		return r, nil
	}
	v, err := parseValue(rest)
	if err != nil {
		return fail("%v", err)
	}
	if v == "" {
		return fail("missing value after %q", r.Op)
	}
	switch r.Op {
	case "<", "<=", ">", ">=":
		if _, ok := number(v); !ok {
			return fail("%s needs a number, got %q", r.Op, v)
		}
	}
	r.Values = []string{v}
	return r, nil
}

func isAttrByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case first:
		return false
	case c >= '0' && c <= '9', c == '.', c == '-', c == '/':
		return true
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// parseValue reads one value: quoted, or bare (no spaces, commas, brackets or quotes).
func parseValue(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if s[0] == '"' || s[0] == '\'' {
		if len(s) < 2 || s[len(s)-1] != s[0] {
			return "", fmt.Errorf("unterminated quote in %q", s)
		}
		inner := s[1 : len(s)-1]
		if strings.IndexByte(inner, s[0]) >= 0 {
			return "", fmt.Errorf("quote inside quoted value %q", s)
		}
		return inner, nil
	}
	if strings.ContainsAny(s, " \t,[]\"'") {
		return "", fmt.Errorf("value %q: quote values that contain spaces, commas, brackets or quotes", s)
	}
	return s, nil
}

// splitList splits the inside of [...] at commas outside quotes.
func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	start, quote := 0, byte(0)
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
				continue
			}
			if c == '"' || c == '\'' {
				quote = c
				continue
			}
			if c != ',' {
				continue
			}
		}
		v, err := parseValue(s[start:i])
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, fmt.Errorf("empty element in the list")
		}
		out = append(out, v)
		start = i + 1
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote")
	}
	return out, nil
}

func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func boolean(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "1":
		return true, true
	case "false", "no", "0":
		return false, true
	}
	return false, false
}

// equal compares an attribute value with a wanted value: numerically when both are numbers
// ("0.950" == "0.95"), as booleans when the wanted value is true/false, else as text.
func equal(have, want string) bool {
	if a, ok := number(have); ok {
		if b, ok := number(want); ok {
			return a == b
		}
	}
	if w := strings.ToLower(want); w == "true" || w == "false" {
		h, ok := boolean(have)
		return ok && h == (w == "true")
	}
	return have == want
}

// Met reports whether attrs satisfy r, and if not, why (for /debug/pools).
func (r Requirement) Met(attrs map[string]string) (bool, string) {
	have, ok := attrs[r.Attr]
	if !ok {
		return false, fmt.Sprintf("attribute %q missing (%s)", r.Attr, r)
	}
	met := false
	switch r.Op {
	case "==":
		met = equal(have, r.Values[0])
	case "!=":
		met = !equal(have, r.Values[0])
	case "in":
		for _, v := range r.Values {
			if equal(have, v) {
				met = true
				break
			}
		}
	default:
		h, ok := number(have)
		if !ok {
			return false, fmt.Sprintf("attribute %s=%q is not a number (%s)", r.Attr, have, r)
		}
		w, _ := number(r.Values[0])
		switch r.Op {
		case "<":
			met = h < w
		case "<=":
			met = h <= w
		case ">":
			met = h > w
		case ">=":
			met = h >= w
		}
	}
	if !met {
		return false, fmt.Sprintf("%s=%s fails %s", r.Attr, have, r)
	}
	return true, ""
}

// String prints the requirement in the syntax ParseRequirement accepts.
func (r Requirement) String() string {
	q := func(v string) string {
		if v == "" || strings.ContainsAny(v, ",[]\"'") || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			if strings.Contains(v, `"`) {
				return "'" + v + "'"
			}
			return `"` + v + `"`
		}
		return v
	}
	if r.Op == "in" {
		vs := make([]string, len(r.Values))
		for i, v := range r.Values {
			vs[i] = q(v)
		}
		return r.Attr + " in [" + strings.Join(vs, ", ") + "]"
	}
	if len(r.Values) == 0 {
		return r.Attr + " " + r.Op
	}
	return r.Attr + " " + r.Op + " " + q(r.Values[0])
}

// Requirements is a service's parsed Require list.
type Requirements []Requirement

func ParseRequirements(list []string) (Requirements, error) {
	rs := make(Requirements, 0, len(list))
	for _, s := range list {
		r, err := ParseRequirement(s)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Met reports whether attrs satisfy every requirement, and the first failure.
func (rs Requirements) Met(attrs map[string]string) (bool, string) {
	for _, r := range rs {
		if ok, why := r.Met(attrs); !ok {
			return false, why
		}
	}
	return true, ""
}
