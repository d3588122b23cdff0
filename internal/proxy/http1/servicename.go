package http1

import (
	"fmt"
	"net"
	"strings"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// ServiceHeader names the target service explicitly; it wins over the Host header.
const ServiceHeader = "X-Continuum-Service"

// InstanceHeader is added to every proxied response: the ID of the instance that answered.
const InstanceHeader = "X-Continuum-Instance"

// errNoService is a request that names no service at all.
var errNoService = fmt.Errorf("no service named: set the %s header, or send Host: SERVICE[.anything][:port]", ServiceHeader)

// ServiceName returns the lower-cased service a request is for: the X-Continuum-Service
// header if present (repeated headers must agree), else the first label of the Host header
// without its port. A Host that is an IP address names no service. Errors describe the
// problem for a 400 answer and quote at most a short prefix of the input.
func ServiceName(header []string, host string) (string, error) {
	if len(header) > 0 {
		name := strings.TrimSpace(header[0])
		for _, h := range header[1:] {
			if !strings.EqualFold(strings.TrimSpace(h), name) {
				return "", fmt.Errorf("%s given %d times with different values", ServiceHeader, len(header))
			}
		}
		if !discovery.ValidServiceName(name) {
			return "", fmt.Errorf("%s %s: want letters, digits, '-', '_' or '.', starting with a letter or digit", ServiceHeader, quoteShort(name))
		}
		return strings.ToLower(name), nil
	}
	if host == "" {
		return "", errNoService
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1] // IPv6 literal without port
	}
	if net.ParseIP(h) != nil {
		return "", errNoService
	}
	label, _, _ := strings.Cut(h, ".")
	if label == "" || !discovery.ValidServiceName(label) || strings.Contains(label, ":") {
		return "", fmt.Errorf("Host %s: its first label is not a service name; set the %s header", quoteShort(host), ServiceHeader)
	}
	return strings.ToLower(label), nil
}

// quoteShort quotes s for an error message, cut to 32 bytes so that a huge header is not
// echoed back.
func quoteShort(s string) string {
	if len(s) > 32 {
		return fmt.Sprintf("%q...", s[:32])
	}
	return fmt.Sprintf("%q", s)
}
