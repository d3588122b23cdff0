package kubeplatform

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/continuum-project/continuum/internal/backoff"
)

// forwarder keeps a port-forward from 127.0.0.1:<local> on the runner's host to a port of a pod,
// through the API server and the pod's kubelet, as `kubectl port-forward` does (SPDY over a
// WebSocket first, plain SPDY for servers without it). A forward that breaks (an API server
// restart, a dropped connection) is re-established on the same local port, so clients keep their
// address; requests in flight when it broke fail, and their callers report it.
type forwarder struct {
	rc        *rest.Config
	cs        kubernetes.Interface
	ns, pod   string
	port      int
	local     int
	closeOnce sync.Once
	closing   chan struct{} // closed by Close
	done      chan struct{} // closed once the last forward has ended
}

// forward starts a forwarder to port of pod ns/name and returns once it listens.
func forward(ctx context.Context, rc *rest.Config, cs kubernetes.Interface, ns, name string, port int) (*forwarder, error) {
	f := &forwarder{rc: rc, cs: cs, ns: ns, pod: name, port: port, closing: make(chan struct{}), done: make(chan struct{})}
	pf, ended, err := f.open(ctx, 0)
	if err != nil {
		return nil, err
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		return nil, fmt.Errorf("port-forward to pod %s/%s: no local port (%v)", ns, name, err)
	}
	f.local = int(ports[0].Local)
	go f.supervise(ended)
	return f, nil
}

// open starts one forward on local (0: any free port); ended receives once it stops, which
// Close makes it do.
func (f *forwarder) open(ctx context.Context, local int) (*portforward.PortForwarder, <-chan struct{}, error) {
	url := f.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(f.ns).Name(f.pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(f.rc)
	if err != nil {
		return nil, nil, err
	}
	var dialer httpstream.Dialer = spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(url, f.rc); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	stopNow := func() { stopOnce.Do(func() { close(stop) }) }
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, f.port)},
		stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, nil, err
	}
	ended := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- pf.ForwardPorts()
		close(ended)
	}()
	go func() { // Close stops this forward
		select {
		case <-f.closing:
			stopNow()
		case <-ended:
		}
	}()
	select {
	case <-ready:
		return pf, ended, nil
	case <-ended:
		return nil, nil, fmt.Errorf("port-forward to pod %s/%s port %d: %w", f.ns, f.pod, f.port, <-errc)
	case <-ctx.Done():
		stopNow()
		return nil, nil, ctx.Err()
	}
}

// supervise re-opens the forward on the same local port each time it ends, until Close or until
// the pod is gone.
func (f *forwarder) supervise(ended <-chan struct{}) {
	defer close(f.done)
	for {
		select {
		case <-f.closing:
			<-ended
			return
		case <-ended:
		}
		retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
		for {
			select {
			case <-f.closing:
				return
			case <-time.After(retry.Delay()):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, e, err := f.open(ctx, f.local)
			if err == nil {
				cancel()
				ended = e
				break
			}
			_, gerr := f.cs.CoreV1().Pods(f.ns).Get(ctx, f.pod, metav1.GetOptions{})
			cancel()
			if apierrors.IsNotFound(gerr) {
				return // nothing to forward to any more
			}
		}
	}
}

// base is the agent's URL through the forward.
func (f *forwarder) base() string { return fmt.Sprintf("http://127.0.0.1:%d", f.local) }

// Close stops forwarding and returns once the forward has ended.
func (f *forwarder) Close() {
	f.closeOnce.Do(func() { close(f.closing) })
	<-f.done
}
