package agent

import (
	"errors"
	"fmt"
)

// The classes of the agent's errors, which select their HTTP status (400, 404, 409); an error of
// no class is a 500.
var (
	errConflict = errors.New("conflict")
	errNotFound = errors.New("not found")
	errBad      = errors.New("bad request")
)

// httpError is an error with the class that chooses its HTTP status.
type httpError struct {
	class error
	msg   string
}

func (e *httpError) Error() string        { return e.msg }
func (e *httpError) Is(target error) bool { return target == e.class }

func errorf(class error, format string, args ...any) error {
	return &httpError{class: class, msg: fmt.Sprintf(format, args...)}
}
