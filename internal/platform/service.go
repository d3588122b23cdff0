package platform

import (
	"fmt"
	"regexp"
)

// Service declares that a supervised process is an instance of a named service listening on
// Port of its node's address. A platform records it with the instance and makes it discoverable
// (the testbed reports it in its Status, which the proxy's testbed discovery source reads).
type Service struct {
	Name string `json:"name"`
	Port int    `json:"port"`
	// Attributes are free-form properties a QoS requirement may constrain (accuracy, tier).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Service names are DNS labels: proxies route by a Host header's first label.
var serviceNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks the name and port.
func (s *Service) Validate() error {
	if !serviceNameRE.MatchString(s.Name) {
		return fmt.Errorf("service name %q: want a DNS label (a-z, 0-9 and '-', at most 63 characters, not starting or ending with '-')", s.Name)
	}
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("service %s: port %d must be between 1 and 65535", s.Name, s.Port)
	}
	return nil
}
