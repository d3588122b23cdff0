package auth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// WriteError answers 401 with Firebase's body, as its REST API writes it:
// {"error" : "Permission denied"} for a rules denial, the token's problem for a bad credential.
func WriteError(w http.ResponseWriter, err error) {
	msg := ErrPermissionDenied.Error()
	var ae *AuthError
	if errors.As(err, &ae) {
		msg = ae.Msg
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	b, _ := json.Marshal(msg)
	io.WriteString(w, "{\n  \"error\" : "+string(b)+"\n}\n")
}
