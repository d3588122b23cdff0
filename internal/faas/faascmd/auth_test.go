package faascmd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/faas/gateway"
	"github.com/continuum-project/continuum/internal/testenv"
)

// runGateway runs `continuum faas gateway ARGS` in this process until the test ends (or stop is
// called) and returns its address and its output so far once it listens.
func runGateway(t *testing.T, args ...string) (addr string, out *testenv.SyncBuffer, stop func()) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(up.Close)
	addr = testenv.FreeAddr(t)
	cmd := newFaaSGatewayCmd()
	out = &testenv.SyncBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"--listen", addr, "--function", "name=echo,url=" + up.URL}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v\n%s", err, out.String())
			}
		case <-time.After(time.Minute):
			t.Errorf("the gateway did not stop within a minute")
		}
	}
	t.Cleanup(stop)
	testenv.Eventually(t, time.Minute, "the gateway listens", func() bool {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the gateway exited: %v\n%s", err, out.String())
		default:
		}
		return strings.Contains(out.String(), "gateway listening")
	})
	return addr, out, stop
}

// runCmd runs a client command (list, scale) with args, stdin and environment.
func runCmd(t *testing.T, mk func() *cobra.Command, stdin string, env map[string]string, args ...string) (string, error) {
	t.Helper()
	for _, k := range []string{EnvURL, EnvUser, EnvPassword} {
		t.Setenv(k, env[k])
	}
	cmd := mk()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

var generatedLine = regexp.MustCompile(`generated a password for user admin: ([0-9a-f]{40})`)

// The gateway generates its credentials on the first start and prints the password once; a
// restart on the same data directory reuses them and does not print it. The client commands
// are refused without the password and work with it from each of its sources.
func TestGatewayCredentialsGeneratedOncePrintedOnceAndUsedByTheCLI(t *testing.T) {
	dataDir := t.TempDir()
	_, out, stop := runGateway(t, "--data-dir", dataDir)
	m := generatedLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the first start did not print a generated password:\n%s", out.String())
	}
	password := m[1]
	secrets := filepath.Join(dataDir, "secrets")
	if b, err := os.ReadFile(filepath.Join(secrets, gateway.PasswordFileName)); err != nil || strings.TrimSpace(string(b)) != password {
		t.Fatalf("the password file holds %q (%v), the output said %q", b, err, password)
	}
	stop()

	addr, out, _ := runGateway(t, "--data-dir", dataDir)
	if strings.Contains(out.String(), password) || generatedLine.MatchString(out.String()) {
		t.Fatalf("the restart printed the password again:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "password from "+filepath.Join(secrets, gateway.PasswordFileName)) {
		t.Errorf("the restart does not say where the password is:\n%s", out.String())
	}
	url := "http://" + addr
	none := filepath.Join(t.TempDir(), "no-secrets") // keeps the clients off the user's own gateway's files

	// Without credentials: 401, and the error says how to give them.
	if _, err := runCmd(t, newListCmd, "", nil, "-g", url, "--secret-mount-path", none); err == nil ||
		!strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--password-stdin") {
		t.Errorf("list without credentials: err = %v, want a 401 that names the ways to give them", err)
	}
	if _, err := runCmd(t, newListCmd, "wrong\n", nil, "-g", url, "-s", "--secret-mount-path", none); err == nil ||
		!strings.Contains(err.Error(), `refused user "admin"`) {
		t.Errorf("list with a wrong password: err = %v, want the refusal", err)
	}
	passFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(passFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stdin string
		env   map[string]string
		args  []string
	}{
		{"--password-stdin", password + "\n", nil, []string{"-g", url, "--password-stdin", "--secret-mount-path", none}},
		{"--password-file", "", nil, []string{"-g", url, "--password-file", passFile, "--secret-mount-path", none}},
		{"$OPENFAAS_PASSWORD and $OPENFAAS_URL", "", map[string]string{EnvURL: addr, EnvPassword: password}, []string{"--secret-mount-path", none}},
		{"the gateway's secrets directory", "", nil, []string{"-g", url, "--secret-mount-path", secrets}},
	} {
		got, err := runCmd(t, newListCmd, c.stdin, c.env, c.args...)
		if err != nil || !strings.Contains(got, "echo") {
			t.Errorf("list with %s: %q, %v", c.name, got, err)
		}
	}
	if got, err := runCmd(t, newScaleCmd, "", nil, "echo", "--replicas", "1", "-g", url, "--password-file", passFile); err != nil || !strings.Contains(got, "asked for 1 replica(s) of echo") {
		t.Errorf("scale with credentials: %q, %v", got, err)
	}
	if _, err := runCmd(t, newScaleCmd, "", nil, "echo", "--replicas", "1", "-g", url, "--secret-mount-path", none); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("scale without credentials: err = %v, want 401", err)
	}
	if _, err := runCmd(t, newScaleCmd, "", nil, "nope", "--replicas", "1", "-g", url, "--password-file", passFile); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("scale of an unknown function: err = %v, want 404", err)
	}
	if _, err := runCmd(t, newScaleCmd, "", nil, "echo", "-g", url); err == nil || !strings.Contains(err.Error(), "--replicas") {
		t.Errorf("scale without --replicas: err = %v", err)
	}
}

// --basic-auth=false opens the system API and says so; explicit credential files are used as
// they are.
func TestGatewayAuthFlags(t *testing.T) {
	addr, out, _ := runGateway(t, "--basic-auth=false", "--data-dir", t.TempDir())
	if !strings.Contains(out.String(), "basic auth is off") {
		t.Errorf("--basic-auth=false does not warn:\n%s", out.String())
	}
	if got, err := runCmd(t, newListCmd, "", nil, "-g", addr, "--secret-mount-path", t.TempDir()); err != nil || !strings.Contains(got, "echo") {
		t.Errorf("list against an open gateway: %q, %v", got, err)
	}

	d := t.TempDir()
	uf, pf := filepath.Join(d, "user"), filepath.Join(d, "pass")
	_ = os.WriteFile(uf, []byte("ops\n"), 0o600)
	_ = os.WriteFile(pf, []byte("hunter22\n"), 0o600)
	addr, out, _ = runGateway(t, "--basic-auth-user-file", uf, "--basic-auth-password-file", pf, "--data-dir", t.TempDir())
	if !strings.Contains(out.String(), "basic auth: user ops, password from "+pf) {
		t.Errorf("explicit files: output\n%s", out.String())
	}
	if got, err := runCmd(t, newListCmd, "hunter22", map[string]string{EnvUser: "ops"}, "-g", addr, "-s"); err != nil || !strings.Contains(got, "echo") {
		t.Errorf("list as ops ($OPENFAAS_USER): %q, %v", got, err)
	}
	if _, err := runCmd(t, newListCmd, "hunter22", nil, "-g", addr, "-s"); err == nil {
		t.Error("list as admin with ops' password was accepted")
	}
}

// With --tls-cert and --tls-key the gateway serves HTTPS; the client verifies the certificate
// unless --tls-no-verify.
func TestGatewayTLS(t *testing.T) {
	cert, key := selfSigned(t)
	addr, out, _ := runGateway(t, "--tls-cert", cert, "--tls-key", key, "--basic-auth=false", "--data-dir", t.TempDir())
	if !strings.Contains(out.String(), "(https)") {
		t.Errorf("output does not say https:\n%s", out.String())
	}
	url := "https://" + addr
	if got, err := runCmd(t, newListCmd, "", nil, "-g", url, "--tls-no-verify", "--secret-mount-path", t.TempDir()); err != nil || !strings.Contains(got, "echo") {
		t.Errorf("list over https with --tls-no-verify: %q, %v", got, err)
	}
	if _, err := runCmd(t, newListCmd, "", nil, "-g", url, "--secret-mount-path", t.TempDir()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("list over https with an unknown CA: err = %v, want a certificate error", err)
	}
	// Plain HTTP to the TLS port gets no answer a client could take for the API's.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain http to the https gateway answered 200")
		}
		resp.Body.Close()
	}
	// Half a pair is refused before anything starts.
	cmd := newFaaSGatewayCmd()
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--function", "name=x,url=http://127.0.0.1:1", "--tls-cert", cert, "--basic-auth=false"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Errorf("--tls-cert alone: err = %v, want one naming --tls-key", err)
	}
}

func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gateway"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	certFile, keyFile = filepath.Join(d, "gw.crt"), filepath.Join(d, "gw.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// The secrets of a gateway on this machine are sent only to a gateway on this machine unless
// the directory is named on the command line; a password sent over plain http to another host
// draws a warning.
func TestClientCredentialsStayLocal(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := (gateway.AuthFiles{SecretDir: dir}).Load(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{EnvURL, EnvUser, EnvPassword} {
		t.Setenv(k, "")
	}
	for _, c := range []struct {
		url      string
		explicit bool
		creds    bool
	}{
		{"http://127.0.0.1:8080", false, true}, {"http://localhost:8080", false, true}, {"http://[::1]:8080", false, true},
		{"http://10.1.2.3:8080", false, false}, {"https://gw.edge:8443", false, false},
		{"http://10.1.2.3:8080", true, true},
	} {
		flags := DefaultClientFlags()
		flags.SecretPath = dir // as the default would be: not named on the command line
		cmd := &cobra.Command{}
		flags.Bind(cmd.Flags())
		var errOut strings.Builder
		cmd.SetErr(&errOut)
		args := []string{"-g", c.url}
		if c.explicit {
			args = append(args, "--secret-mount-path", dir)
		}
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		cl, err := flags.client(cmd, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.Credentials != nil; got != c.creds {
			t.Errorf("%s (named: %v): credentials sent = %v, want %v", c.url, c.explicit, got, c.creds)
		}
		warned := strings.Contains(errOut.String(), "WARNING: basic auth over plain http")
		if want := c.creds && strings.HasPrefix(c.url, "http://") && !strings.Contains(c.url, "127.0.0.1") &&
			!strings.Contains(c.url, "localhost") && !strings.Contains(c.url, "[::1]"); warned != want {
			t.Errorf("%s: warned = %v (%q), want %v", c.url, warned, errOut.String(), want)
		}
	}
}
