package rules

import (
	"regexp"
	"sort"
	"strings"
)

// expr is one node of a parsed expression.
type expr struct {
	kind exprKind
	name string // variable, member, method or operator
	val  any    // literal: nil, bool, float64, string
	re   *regexp.Regexp
	args []*expr // operands; for a call the receiver first, then the arguments
	pos  int
}

type exprKind int

const (
	eLit exprKind = iota
	eVar
	eMember
	eCall
	eUnary
	eBinary
	eCond
	eArray
	eRegex
)

// maxNesting bounds the parser's recursion, so a hostile rules file cannot exhaust the stack.
const maxNesting = 100

// methods lists every method the evaluator knows with its argument count (-1: 0 or 1).
var methods = map[string]int{
	"val": 0, "child": 1, "parent": 0, "hasChild": 1, "hasChildren": -1, "exists": 0,
	"getPriority": 0, "isNumber": 0, "isString": 0, "isBoolean": 0,
	"contains": 1, "beginsWith": 1, "endsWith": 1, "replace": 2, "toLowerCase": 0,
	"toUpperCase": 0, "matches": 1,
}

type parser struct {
	toks  []token
	i     int
	vars  map[string]bool // the names in scope
	depth int
}

// parseExpr parses one rule expression with the given variables in scope.
func parseExpr(src string, vars map[string]bool) (*expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, vars: vars}
	e, err := p.ternary()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errAt(t.pos, "unexpected %s after the end of the expression", describe(t))
	}
	return e, nil
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tStr:
		return "string"
	case tNum:
		return "number " + t.text
	case tRegex:
		return "regular expression"
	}
	return "'" + t.text + "'"
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }
func (p *parser) isOp(s string) bool {
	t := p.toks[p.i]
	return t.kind == tOp && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.isOp(s) {
		t := p.peek()
		return errAt(t.pos, "expected '%s', found %s", s, describe(t))
	}
	p.i++
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return errAt(p.peek().pos, "expression nested more than %d levels deep", maxNesting)
	}
	return nil
}

func (p *parser) ternary() (*expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.isOp("?") {
		return c, nil
	}
	pos := p.next().pos
	a, err := p.ternary()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.ternary()
	if err != nil {
		return nil, err
	}
	return &expr{kind: eCond, args: []*expr{c, a, b}, pos: pos}, nil
}

// levels are the binary operators by increasing precedence.
var levels = [][]string{
	{"||"}, {"&&"}, {"==", "!=", "===", "!=="}, {"<", ">", "<=", ">="}, {"+", "-"}, {"*", "/", "%"},
}

func (p *parser) binary(level int) (*expr, error) {
	if level == len(levels) {
		return p.unary()
	}
	l, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		found := false
		for _, o := range levels[level] {
			if t.kind == tOp && t.text == o {
				found = true
			}
		}
		if !found {
			return l, nil
		}
		p.i++
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		l = &expr{kind: eBinary, name: t.text, args: []*expr{l, r}, pos: t.pos}
	}
}

func (p *parser) unary() (*expr, error) {
	if p.isOp("!") || p.isOp("-") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		t := p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &expr{kind: eUnary, name: t.text, args: []*expr{x}, pos: t.pos}, nil
	}
	return p.postfix()
}

func (p *parser) postfix() (*expr, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.i++
			t := p.next()
			if t.kind != tIdent {
				return nil, errAt(t.pos, "expected a property or method name after '.', found %s", describe(t))
			}
			if !p.isOp("(") {
				x = &expr{kind: eMember, name: t.text, args: []*expr{x}, pos: t.pos}
				continue
			}
			n, ok := methods[t.text]
			if !ok {
				return nil, errAt(t.pos, "unknown method %s(): known are val, child, parent, hasChild, hasChildren, exists, getPriority, isNumber, isString, isBoolean, contains, beginsWith, endsWith, replace, toLowerCase, toUpperCase, matches", t.text)
			}
			p.i++
			args := []*expr{x}
			for !p.isOp(")") {
				if len(args) > 1 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
				}
				a, err := p.ternary()
				if err != nil {
					return nil, err
				}
				args = append(args, a)
			}
			p.i++
			if got := len(args) - 1; n >= 0 && got != n || n < 0 && got > 1 {
				return nil, errAt(t.pos, "%s() takes %d argument(s), got %d", t.text, max(n, 1), got)
			}
			x = &expr{kind: eCall, name: t.text, args: args, pos: t.pos}
		case p.isOp("["):
			t := p.next()
			k, err := p.ternary()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			x = &expr{kind: eMember, args: []*expr{x, k}, pos: t.pos}
		default:
			return x, nil
		}
	}
}

func (p *parser) primary() (*expr, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return &expr{kind: eLit, val: t.num, pos: t.pos}, nil
	case tStr:
		return &expr{kind: eLit, val: t.text, pos: t.pos}, nil
	case tRegex:
		src := t.text
		for _, f := range t.flag {
			if f != 'i' {
				return nil, errAt(t.pos, "regular expression flag %q: only i is supported", f)
			}
			src = "(?i)" + src
		}
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, errAt(t.pos, "bad regular expression /%s/: %v", t.text, err)
		}
		return &expr{kind: eRegex, re: re, pos: t.pos}, nil
	case tIdent:
		switch t.text {
		case "true", "false":
			return &expr{kind: eLit, val: t.text == "true", pos: t.pos}, nil
		case "null":
			return &expr{kind: eLit, val: nil, pos: t.pos}, nil
		}
		if !p.vars[t.text] {
			return nil, errAt(t.pos, "unknown variable '%s': in scope are %s", t.text, scopeList(p.vars))
		}
		return &expr{kind: eVar, name: t.text, pos: t.pos}, nil
	case tOp:
		switch t.text {
		case "(":
			x, err := p.ternary()
			if err != nil {
				return nil, err
			}
			return x, p.expect(")")
		case "[":
			a := &expr{kind: eArray, pos: t.pos}
			for !p.isOp("]") {
				if len(a.args) > 0 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
				}
				x, err := p.ternary()
				if err != nil {
					return nil, err
				}
				a.args = append(a.args, x)
			}
			p.i++
			return a, nil
		}
	}
	return nil, errAt(t.pos, "expected a value, found %s", describe(t))
}

func scopeList(vars map[string]bool) string {
	var names []string
	for _, n := range []string{"auth", "now", "root", "data", "newData"} {
		if vars[n] {
			names = append(names, n)
		}
	}
	var dollars []string
	for n := range vars {
		if strings.HasPrefix(n, "$") {
			dollars = append(dollars, n)
		}
	}
	sort.Strings(dollars)
	return strings.Join(append(names, dollars...), ", ")
}
