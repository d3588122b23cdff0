package rules

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is a lexical class of the expression language.
type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tStr
	tIdent
	tRegex
	tOp // operators and punctuation; text holds which
)

type token struct {
	kind tokKind
	text string  // operator, identifier, the decoded string, or the regex source
	num  float64 // tNum
	flag string  // tRegex flags
	pos  int     // byte offset in the expression
}

// SyntaxError is an error in one expression, at a byte offset of it.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at offset %d: %s", e.Pos, e.Msg) }

func errAt(pos int, format string, a ...any) *SyntaxError {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, a...)}
}

// operators, longest first so that "===" is not read as "==" "=".
var operators = []string{"===", "!==", "==", "!=", "<=", ">=", "&&", "||",
	"!", "<", ">", "+", "-", "*", "/", "%", "?", ":", "(", ")", "[", "]", ",", "."}

// lex splits an expression into tokens. A '/' starts a regular expression literal where an operand
// is expected (at the start, after an operator or an opening bracket), as in JavaScript.
func lex(src string) ([]token, error) {
	var toks []token
	operandDone := func() bool {
		if len(toks) == 0 {
			return false
		}
		t := toks[len(toks)-1]
		return t.kind != tOp || t.text == ")" || t.text == "]"
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9' && !operandDone():
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			f, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, errAt(i, "bad number %q", src[i:j])
			}
			toks = append(toks, token{kind: tNum, num: f, text: src[i:j], pos: i})
			i = j
		case c == '\'' || c == '"':
			s, n, err := lexString(src[i:])
			if err != nil {
				return nil, errAt(i, "%s", err.Error())
			}
			toks = append(toks, token{kind: tStr, text: s, pos: i})
			i += n
		case c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] == '$' || src[j] >= 'a' && src[j] <= 'z' ||
				src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], pos: i})
			i = j
		case c == '/' && !operandDone():
			j := i + 1
			inClass := false
			for ; j < len(src); j++ {
				if src[j] == '\\' {
					j++
					continue
				}
				if src[j] == '[' {
					inClass = true
				} else if src[j] == ']' {
					inClass = false
				} else if src[j] == '/' && !inClass {
					break
				}
			}
			if j >= len(src) {
				return nil, errAt(i, "unterminated regular expression")
			}
			k := j + 1
			for k < len(src) && src[k] >= 'a' && src[k] <= 'z' {
				k++
			}
			toks = append(toks, token{kind: tRegex, text: src[i+1 : j], flag: src[j+1 : k], pos: i})
			i = k
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, errAt(i, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

// lexString decodes a quoted string at the start of s and returns it and its length in s.
func lexString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\':
			i++
			if i >= len(s) {
				return "", 0, fmt.Errorf("unterminated string")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u':
				if i+4 >= len(s) {
					return "", 0, fmt.Errorf("bad \\u escape")
				}
				n, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
				if err != nil {
					return "", 0, fmt.Errorf("bad \\u escape %q", s[i+1:i+5])
				}
				b.WriteRune(rune(n))
				i += 4
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}
