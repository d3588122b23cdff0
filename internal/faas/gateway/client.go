package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls a gateway's system API with its basic auth credentials, as faas-cli does.
type Client struct {
	// URL is the gateway's base URL (http://host:port or https://host:port).
	URL string
	// Credentials, if set, are sent as basic auth on every /system/ call.
	Credentials *Credentials
	// HTTP is the client to use (default: one with a 30 s timeout).
	HTTP *http.Client
}

// NewClient is a client of the gateway at url; insecureTLS skips verifying an https
// gateway's certificate (faas-cli's --tls-no-verify).
func NewClient(url string, c *Credentials, insecureTLS bool) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecureTLS {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by the user
	}
	return &Client{URL: strings.TrimRight(url, "/"), Credentials: c, HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Functions lists the gateway's functions (GET /system/functions).
func (c *Client) Functions(ctx context.Context) ([]FunctionStatus, error) {
	var out []FunctionStatus
	body, err := c.do(ctx, http.MethodGet, "/system/functions", nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET %s/system/functions: answer is not the function list: %w", c.URL, err)
	}
	return out, nil
}

// Scale sets a function's wanted replicas (POST /system/scale-function/NAME).
func (c *Client) Scale(ctx context.Context, name string, replicas int) error {
	b, _ := json.Marshal(map[string]int{"replicas": replicas})
	_, err := c.do(ctx, http.MethodPost, "/system/scale-function/"+name, b, http.StatusAccepted)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		return nil, fmt.Errorf("gateway URL %q: %w", c.URL, err)
	}
	if c.Credentials != nil {
		req.SetBasicAuth(c.Credentials.User, c.Credentials.Password)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the gateway: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: %w", method, c.URL, path, err)
	}
	switch {
	case resp.StatusCode == want:
		return b, nil
	case resp.StatusCode == http.StatusUnauthorized && c.Credentials == nil:
		return nil, fmt.Errorf("%s %s%s: 401: the gateway wants basic auth: give --password-stdin, --password-file or $OPENFAAS_PASSWORD (user: --username or $OPENFAAS_USER, default %s)", method, c.URL, path, DefaultUser)
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, fmt.Errorf("%s %s%s: 401: the gateway refused user %q's password", method, c.URL, path, c.Credentials.User)
	}
	return nil, fmt.Errorf("%s %s%s: %s: %s", method, c.URL, path, resp.Status, strings.TrimSpace(string(b)))
}
