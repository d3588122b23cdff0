package httpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Write answers code with v as one line of JSON. v is encoded before anything is sent, so a
// value that cannot be encoded becomes a 500 with the one error body rather than a success
// status followed by half a document.
func Write(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: "encode answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// ErrorBody is the one error body of the APIs that use this package: {"error": "..."}. Clients
// read it with this type too.
type ErrorBody struct {
	Error string `json:"error"`
}

// Error answers code with msg as the error body.
func Error(w http.ResponseWriter, code int, msg string) {
	Write(w, code, ErrorBody{Error: msg})
}

// Errorf answers code with the formatted message as the error body.
func Errorf(w http.ResponseWriter, code int, format string, args ...any) {
	Error(w, code, fmt.Sprintf(format, args...))
}

// Decode reads r's body as exactly one JSON value into v. It reads at most max bytes (through
// http.MaxBytesReader, so that the server closes a connection whose body is left unread),
// rejects fields v does not have and anything after the value. Its errors say what was wrong
// and where (the byte offset of bad JSON, the field of a mistyped value); Status maps them to
// 413 or 400.
func Decode(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	body := &counter{r: http.MaxBytesReader(w, r.Body, max)}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(err, body.n, max)
	}
	// A second value, or garbage after the first, is a malformed body rather than something to
	// ignore: the client meant something else.
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("request body: more than one JSON value (the second starts before byte %d)", dec.InputOffset())
		}
		return describe(err, body.n, max)
	}
	return nil
}

// counter counts the bytes read through it: where a truncated body ended.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// describe turns a decoding error into one that names the limit, the offset or the field; read
// is how much of the body was read.
func describe(err error, read, max int64) error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return &TooLargeError{Limit: max}
	case errors.Is(err, io.EOF):
		return errors.New("request body: empty (want a JSON value)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("request body: JSON ends early, after %d bytes", read)
	case errors.As(err, &syntax):
		return fmt.Errorf("request body: bad JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(the whole body)"
		}
		return fmt.Errorf("request body: field %s: want %s, got JSON %s at byte %d", field, typ.Type, typ.Value, typ.Offset)
	}
	return fmt.Errorf("request body: %w", err) // unknown field: json names it
}

// TooLargeError is Decode's error for a body over its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("request body: larger than %d bytes", e.Limit)
}

// Status is the status code for a Decode error: 413 for a body over the limit, 400 otherwise.
func Status(err error) int {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
