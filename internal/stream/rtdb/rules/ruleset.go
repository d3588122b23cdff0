package rules

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Ruleset is a parsed rules file; it is immutable and safe for concurrent use.
type Ruleset struct {
	root *node
	src  []byte
}

// node is the rules at one level of the tree.
type node struct {
	read, write, validate *rule
	indexOn               []string
	children              map[string]*node
	wildName              string // "$var" of the wildcard child, if any
	wild                  *node
}

// rule is one .read/.write/.validate: a constant or an expression.
type rule struct {
	src  string
	expr *expr
}

// ParseError is an error in a rules file: where (1-based line and column), the offending text
// and what was wrong.
type ParseError struct {
	Line, Col int
	Text      string // the offending text, as written in the file
	Msg       string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s (at %q)", e.Line, e.Col, e.Msg, e.Text)
}

// Parse parses a rules file: `{"rules": {...}}`, JSON with comments.
func Parse(src []byte) (*Ruleset, error) {
	s := string(src)
	if !utf8.ValidString(s) {
		return nil, errors.New("rules: not UTF-8 text")
	}
	fail := func(pos int, msg string) error {
		line, col := 1, 1
		for _, r := range s[:min(pos, len(s))] {
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		end := pos
		for end < len(s) && end-pos < 40 && s[end] != '\n' {
			end++
		}
		return &ParseError{Line: line, Col: col, Text: s[min(pos, len(s)):end], Msg: msg}
	}
	top, err := parseJSONC(s)
	if err != nil {
		var je *jerr
		if errors.As(err, &je) {
			return nil, fail(je.pos, je.msg)
		}
		return nil, err
	}
	if top.kind != 'o' {
		return nil, fail(top.pos, `a rules file is an object: {"rules": {...}}`)
	}
	var body *jval
	for i, k := range top.keys {
		if k != "rules" {
			return nil, fail(top.kpos[i], fmt.Sprintf("unknown top-level key %q: only \"rules\" is allowed", k))
		}
		body = top.vals[i]
	}
	if body == nil {
		return nil, fail(top.pos, `missing "rules": a rules file is {"rules": {...}}`)
	}
	b := builder{fail: fail, src: s}
	root, err := b.node(body, map[string]bool{}, 0)
	if err != nil {
		return nil, err
	}
	return &Ruleset{root: root, src: append([]byte(nil), src...)}, nil
}

// Source is the rules file as given.
func (r *Ruleset) Source() []byte { return r.src }

type builder struct {
	fail func(pos int, msg string) error
	src  string
}

func (b *builder) node(v *jval, dollars map[string]bool, depth int) (*node, error) {
	if v.kind != 'o' {
		return nil, b.fail(v.pos, "a rules node must be an object of .read/.write/.validate/.indexOn and child keys")
	}
	if depth > 32 {
		return nil, b.fail(v.pos, "rules nested deeper than the database's 32 levels")
	}
	n := &node{}
	for i, k := range v.keys {
		val, kpos := v.vals[i], v.kpos[i]
		switch {
		case k == ".read" || k == ".write" || k == ".validate":
			r, err := b.rule(k, val, dollars)
			if err != nil {
				return nil, err
			}
			switch k {
			case ".read":
				n.read = r
			case ".write":
				n.write = r
			default:
				n.validate = r
			}
		case k == ".indexOn":
			switch val.kind {
			case 's':
				n.indexOn = []string{val.str}
			case 'a':
				for _, e := range val.vals {
					if e.kind != 's' {
						return nil, b.fail(e.pos, ".indexOn: want a string or an array of strings")
					}
					n.indexOn = append(n.indexOn, e.str)
				}
			default:
				return nil, b.fail(val.pos, ".indexOn: want a string or an array of strings")
			}
		case strings.HasPrefix(k, "."):
			return nil, b.fail(kpos, fmt.Sprintf("unknown rule %q: allowed are .read, .write, .validate and .indexOn", k))
		case strings.HasPrefix(k, "$"):
			if n.wild != nil {
				return nil, b.fail(kpos, fmt.Sprintf("two wildcards at one level (%s and %s): at most one $variable per level", n.wildName, k))
			}
			if !validName(k[1:]) {
				return nil, b.fail(kpos, fmt.Sprintf("bad wildcard %q: $ then letters, digits or _", k))
			}
			if dollars[k] {
				return nil, b.fail(kpos, fmt.Sprintf("wildcard %s is already used by an ancestor", k))
			}
			inner := make(map[string]bool, len(dollars)+1)
			for d := range dollars {
				inner[d] = true
			}
			inner[k] = true
			c, err := b.node(val, inner, depth+1)
			if err != nil {
				return nil, err
			}
			n.wildName, n.wild = k, c
		default:
			if k == "" || strings.ContainsAny(k, ".#$[]/") {
				return nil, b.fail(kpos, fmt.Sprintf("bad key %q: keys may not be empty or contain . # $ [ ] /", k))
			}
			c, err := b.node(val, dollars, depth+1)
			if err != nil {
				return nil, err
			}
			if n.children == nil {
				n.children = map[string]*node{}
			}
			n.children[k] = c
		}
	}
	return n, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (b *builder) rule(name string, v *jval, dollars map[string]bool) (*rule, error) {
	switch v.kind {
	case 'b':
		return &rule{src: fmt.Sprint(v.b), expr: &expr{kind: eLit, val: v.b}}, nil
	case 's':
	default:
		return nil, b.fail(v.pos, name+": want true, false or an expression in a string")
	}
	vars := map[string]bool{"auth": true, "now": true, "root": true, "data": true}
	if name != ".read" {
		vars["newData"] = true
	}
	for d := range dollars {
		vars[d] = true
	}
	e, err := parseExpr(v.str, vars)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			// Point into the string when it has no escapes (then offsets match the file).
			pos := v.pos
			if raw := b.src[v.pos:]; !strings.Contains(raw[:min(len(raw), len(v.str)+2)], `\`) {
				pos += 1 + se.Pos
			}
			err := b.fail(pos, name+": "+se.Msg)
			if pe, ok := err.(*ParseError); ok {
				pe.Text = v.str // the whole expression, the column pointing into it
			}
			return nil, err
		}
		return nil, b.fail(v.pos, name+": "+err.Error())
	}
	return &rule{src: v.str, expr: e}, nil
}
