package rtdbbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func openStream(ctx context.Context, hc *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("listen: status %d", resp.StatusCode)
	}
	return resp.Body, nil
}

func put(ctx context.Context, hc *http.Client, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, "PUT", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT: status %d", resp.StatusCode)
	}
	return nil
}

func kvClient(kvURL string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{kvURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}
