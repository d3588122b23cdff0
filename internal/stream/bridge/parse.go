package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// entry is one posted object: its record key and its bytes, unchanged.
type entry struct {
	key   []byte
	value []byte
}

// parseBody splits a post's body (one JSON object, or an array of them) into entries keyed by
// keyField. Errors name the object (by index, for an array) and what was wrong.
func parseBody(body []byte, keyField string) ([]entry, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("empty body: want a JSON object or an array of JSON objects")
	}
	if body[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil {
			return nil, fmt.Errorf("body is not a JSON array of objects: %v", err)
		}
		if len(elems) == 0 {
			return nil, errors.New("empty array: want at least one JSON object")
		}
		out := make([]entry, len(elems))
		for i, e := range elems {
			k, err := keyOf(e, keyField)
			if err != nil {
				return nil, fmt.Errorf("element %d: %v", i, err)
			}
			out[i] = entry{key: k, value: e}
		}
		return out, nil
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return nil, fmt.Errorf("body is not JSON: %v", err)
	}
	k, err := keyOf(body, keyField)
	if err != nil {
		return nil, err
	}
	return []entry{{key: k, value: body}}, nil
}

// keyOf finds the top-level field keyField of obj (valid JSON) and returns the record key: a
// string's text, or a number as written.
func keyOf(obj []byte, keyField string) ([]byte, error) {
	raw, err := KeyValue(obj, keyField)
	switch {
	case err != nil:
		return nil, err
	case raw == nil:
		return nil, fmt.Errorf("no %q field: every record needs one (a string or a number), its Kafka key", keyField)
	}
	switch raw[0] {
	case '"':
		k := unquote(raw)
		if k == "" {
			return nil, fmt.Errorf("field %q is an empty string: the key must not be empty", keyField)
		}
		return []byte(k), nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw, nil
	}
	return nil, fmt.Errorf("field %q is %s: want a string or a number", keyField, kindOf(raw[0]))
}

// KeyValue returns the raw JSON value of obj's top-level field keyField (nil when obj has none).
// obj must be valid JSON. A field named twice (however its name is escaped) is an error: the
// bridge would key the record by one value while a JSON decoder (the aggregator's, the
// database's) keeps the other, so the record would land at an id whose records Kafka orders on
// another partition. The bridge refuses such a post, and the aggregator, which reads the key
// field through this function too, makes such a record (from another producer) a dead letter.
func KeyValue(obj []byte, keyField string) ([]byte, error) {
	s := scanner{b: obj}
	s.space()
	if s.peek() != '{' {
		return nil, fmt.Errorf("not a JSON object (it starts with %q): every record must be an object with a %q field", kindOf(s.peek()), keyField)
	}
	s.i++
	var raw []byte
	n := 0
	for {
		s.space()
		if s.peek() == '}' {
			break
		}
		name := s.str()
		s.space()
		s.i++ // ':'
		s.space()
		start := s.i
		s.value()
		if string(name[1:len(name)-1]) == keyField || (bytes.IndexByte(name, '\\') >= 0 && unquote(name) == keyField) {
			if n++; n == 1 {
				raw = obj[start:s.i]
			}
		}
		s.space()
		if s.peek() == ',' {
			s.i++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("field %q appears %d times: a record's key field must appear once (Kafka would key the record by the first value, a JSON decoder keeps the last)", keyField, n)
	}
	return raw, nil
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// unquote decodes a JSON string literal (valid, quotes included) as encoding/json does, invalid
// UTF-8 becoming U+FFFD: the key is then the id the aggregator reads.
func unquote(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// scanner walks JSON that is known to be valid, so it checks nothing.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) && strings.IndexByte(" \t\r\n", s.b[s.i]) >= 0 {
		s.i++
	}
}

// str consumes a string literal and returns it, quotes included.
func (s *scanner) str() []byte {
	start := s.i
	s.i++
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
	return s.b[start:s.i]
}

// value consumes one value.
func (s *scanner) value() {
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default: // number, true, false, null
		for s.i < len(s.b) && strings.IndexByte(",}] \t\r\n", s.b[s.i]) < 0 {
			s.i++
		}
	}
}
