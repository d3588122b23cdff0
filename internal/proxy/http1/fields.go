package http1

import "bytes"

// Field is one header field: name and value (without surrounding whitespace).
type Field struct{ Name, Value []byte }

// tchar: RFC 9110 token characters.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// parseFields parses header lines from b (which starts after the start line) up to and
// including the empty line. It returns the bytes consumed.
func parseFields(b []byte, fields []Field) ([]Field, int, error) {
	i := 0
	for {
		if i >= len(b) {
			return fields, 0, ErrHeadIncomplete
		}
		if b[i] == '\r' {
			if i+1 >= len(b) {
				return fields, 0, ErrHeadIncomplete
			}
			if b[i+1] != '\n' {
				return fields, 0, ErrHeadFallback
			}
			return fields, i + 2, nil
		}
		// name
		ns := i
		for i < len(b) && tchar[b[i]] {
			i++
		}
		if i >= len(b) {
			return fields, 0, ErrHeadIncomplete
		}
		if i == ns || b[i] != ':' {
			return fields, 0, ErrHeadFallback // obs-fold, space before the colon, bad char
		}
		name := b[ns:i]
		i++
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		vs := i
		for i < len(b) {
			c := b[i]
			if c == '\r' {
				break
			}
			// field-vchar, SP, HTAB, obs-text; no CTLs.
			if c < ' ' && c != '\t' || c == 0x7f {
				return fields, 0, ErrHeadFallback
			}
			i++
		}
		if i+1 >= len(b) {
			return fields, 0, ErrHeadIncomplete
		}
		if b[i+1] != '\n' {
			return fields, 0, ErrHeadFallback
		}
		ve := i
		for ve > vs && (b[ve-1] == ' ' || b[ve-1] == '\t') {
			ve--
		}
		if len(fields) == maxHeaders {
			return fields, 0, ErrHeadFallback
		}
		fields = append(fields, Field{Name: name, Value: b[vs:ve]})
		i += 2
	}
}

// lineEnd returns the index of the CR of the first CRLF in b, errHeadIncomplete when b holds
// no line end yet, errHeadFallback for a bare LF.
func lineEnd(b []byte) (int, error) {
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0:
		return 0, ErrHeadIncomplete
	case i == 0 || b[i-1] != '\r':
		return 0, ErrHeadFallback
	}
	return i - 1, nil
}

// FieldIs compares a field name with a canonical name, ignoring ASCII case.
func FieldIs(name []byte, canon string) bool {
	return len(name) == len(canon) && ASCIIEqualFold(name, canon)
}

// ASCIIEqualFold compares b and s ignoring ASCII case.
func ASCIIEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// NextToken splits a comma-separated list: the first element (trimmed) and the rest.
func NextToken(v []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		tok, rest = v[:i], v[i+1:]
	} else {
		tok = v
	}
	return bytes.Trim(tok, " \t"), rest
}

// ParseLength parses a Content-Length value: decimal digits only, at most 18 of them.
func ParseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// ListedIn reports whether a Connection field among fields names name.
func ListedIn(fields []Field, name []byte) bool {
	for _, f := range fields {
		if !FieldIs(f.Name, "Connection") {
			continue
		}
		for v := f.Value; len(v) > 0; {
			var tok []byte
			tok, v = NextToken(v)
			if len(tok) == len(name) && bytes.EqualFold(tok, name) {
				return true
			}
		}
	}
	return false
}

// HopField reports the hop-by-hop fields (RFC 9110 7.6.1) that the proxy does not forward,
// whichever way.
func HopField(name []byte) bool {
	switch len(name) {
	case 2:
		return FieldIs(name, "Te")
	case 7:
		return FieldIs(name, "Trailer") || FieldIs(name, "Upgrade")
	case 10:
		return FieldIs(name, "Connection") || FieldIs(name, "Keep-Alive")
	case 16:
		return FieldIs(name, "Proxy-Connection")
	case 17:
		return FieldIs(name, "Transfer-Encoding")
	case 18:
		return FieldIs(name, "Proxy-Authenticate")
	case 19:
		return FieldIs(name, "Proxy-Authorization")
	}
	return false
}
