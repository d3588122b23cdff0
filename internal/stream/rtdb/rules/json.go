package rules

import (
	"encoding/json"
	"fmt"
	"strings"
)

// jval is a JSON value of a rules file with the byte offset where it starts, so errors can
// name a line and column. The rules file is JSON plus // and /* */ comments, as Firebase's.
type jval struct {
	pos  int
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	str  string
	b    bool
	keys []string
	kpos []int
	vals []*jval
}

type jparser struct {
	src   string
	i     int
	depth int
}

// jerr is a syntax error at an offset of the file.
type jerr struct {
	pos int
	msg string
}

func (e *jerr) Error() string { return e.msg }

func parseJSONC(src string) (*jval, error) {
	p := &jparser{src: src}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i < len(src) {
		return nil, &jerr{p.i, "unexpected text after the end of the JSON value"}
	}
	return v, nil
}

// space skips white space and comments.
func (p *jparser) space() error {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case strings.HasPrefix(p.src[p.i:], "//"):
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		case strings.HasPrefix(p.src[p.i:], "/*"):
			end := strings.Index(p.src[p.i+2:], "*/")
			if end < 0 {
				return &jerr{p.i, "unterminated /* comment"}
			}
			p.i += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jval, error) {
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i >= len(p.src) {
		return nil, &jerr{p.i, "unexpected end of file: a JSON value was expected"}
	}
	start := p.i
	switch c := p.src[p.i]; {
	case c == '{' || c == '[':
		p.depth++
		if p.depth > 200 {
			return nil, &jerr{start, "nested too deeply"}
		}
		defer func() { p.depth-- }()
		p.i++
		v := &jval{pos: start, kind: 'o'}
		closer := byte('}')
		if c == '[' {
			v.kind, closer = 'a', ']'
		}
		for first := true; ; first = false {
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.i < len(p.src) && p.src[p.i] == closer {
				p.i++
				return v, nil
			}
			if !first {
				if p.i >= len(p.src) || p.src[p.i] != ',' {
					return nil, &jerr{p.i, fmt.Sprintf("expected ',' or '%c'", closer)}
				}
				p.i++
				if err := p.space(); err != nil {
					return nil, err
				}
			}
			if v.kind == 'o' {
				kpos := p.i
				if p.i >= len(p.src) || p.src[p.i] != '"' {
					return nil, &jerr{p.i, "expected a key in double quotes"}
				}
				k, err := p.str()
				if err != nil {
					return nil, err
				}
				if err := p.space(); err != nil {
					return nil, err
				}
				if p.i >= len(p.src) || p.src[p.i] != ':' {
					return nil, &jerr{p.i, "expected ':' after the key"}
				}
				p.i++
				v.keys, v.kpos = append(v.keys, k), append(v.kpos, kpos)
			}
			e, err := p.value()
			if err != nil {
				return nil, err
			}
			v.vals = append(v.vals, e)
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jval{pos: start, kind: 's', str: s}, nil
	case strings.HasPrefix(p.src[p.i:], "true"):
		p.i += 4
		return &jval{pos: start, kind: 'b', b: true}, nil
	case strings.HasPrefix(p.src[p.i:], "false"):
		p.i += 5
		return &jval{pos: start, kind: 'b'}, nil
	case strings.HasPrefix(p.src[p.i:], "null"):
		p.i += 4
		return &jval{pos: start, kind: 'z'}, nil
	case c == '-' || c >= '0' && c <= '9':
		j := p.i
		for j < len(p.src) && strings.IndexByte("+-.eE0123456789", p.src[j]) >= 0 {
			j++
		}
		var f float64
		if err := json.Unmarshal([]byte(p.src[p.i:j]), &f); err != nil {
			return nil, &jerr{p.i, fmt.Sprintf("bad number %q", p.src[p.i:j])}
		}
		p.i = j
		return &jval{pos: start, kind: 'n', str: p.src[start:j]}, nil
	}
	return nil, &jerr{p.i, "expected a JSON value (object, array, string, number, true, false or null)"}
}

// str reads a double-quoted JSON string at p.i.
func (p *jparser) str() (string, error) {
	start := p.i
	j := p.i + 1
	for ; j < len(p.src); j++ {
		if p.src[j] == '\\' {
			j++
			continue
		}
		if p.src[j] == '"' {
			break
		}
		if p.src[j] == '\n' {
			return "", &jerr{start, "unterminated string"}
		}
	}
	if j >= len(p.src) {
		return "", &jerr{start, "unterminated string"}
	}
	var s string
	if err := json.Unmarshal([]byte(p.src[start:j+1]), &s); err != nil {
		return "", &jerr{start, "bad string: " + err.Error()}
	}
	p.i = j + 1
	return s, nil
}
