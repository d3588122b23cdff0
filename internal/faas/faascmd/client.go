package faascmd

import (
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/continuum-project/continuum/internal/faas/gateway"
)

// The environment faas-cli reads the gateway from (OPENFAAS_URL), and the user and password
// the client commands read when no flag gives them.
const (
	EnvURL      = "OPENFAAS_URL"
	EnvUser     = "OPENFAAS_USER"
	EnvPassword = "OPENFAAS_PASSWORD"
)

// ClientFlags are the flags of the commands that call a gateway's /system/ API, named as
// faas-cli names them (--gateway, --username, --password-stdin, --tls-no-verify).
type ClientFlags struct {
	Gateway       string
	Username      string
	PasswordStdin bool
	PasswordFile  string
	SecretPath    string
	TLSNoVerify   bool
}

// DefaultClientFlags: the local gateway, user admin, the local gateway's secrets directory.
func DefaultClientFlags() ClientFlags {
	return ClientFlags{Gateway: "http://127.0.0.1:8080", Username: gateway.DefaultUser,
		SecretPath: gateway.SecretDir(gateway.DefaultDataDir())}
}

// Bind declares the flags on fs.
func (f *ClientFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVarP(&f.Gateway, "gateway", "g", f.Gateway, "the gateway's URL, http(s)://host:port (or $"+EnvURL+")")
	fs.StringVarP(&f.Username, "username", "u", f.Username, "basic auth user (or $"+EnvUser+")")
	fs.BoolVarP(&f.PasswordStdin, "password-stdin", "s", f.PasswordStdin, "read the password from stdin")
	fs.StringVar(&f.PasswordFile, "password-file", f.PasswordFile, "read the password from this file")
	fs.StringVar(&f.SecretPath, "secret-mount-path", f.SecretPath, "when no password is given (flag or $"+EnvPassword+"): read basic-auth-user and basic-auth-password from this directory if they are there, as a gateway on this machine writes them (used for a gateway on another host only when given explicitly)")
	fs.BoolVar(&f.TLSNoVerify, "tls-no-verify", f.TLSNoVerify, "do not verify an https gateway's certificate")
}

// client resolves the URL and the credentials, in this order: --password-stdin,
// --password-file, $OPENFAAS_PASSWORD, then the secrets directory's files if readable (a gateway
// on this machine); with none, no credentials (a gateway with --basic-auth=false).
func (f *ClientFlags) client(cmd *cobra.Command, stdin io.Reader) (*gateway.Client, error) {
	url := f.Gateway
	if !cmd.Flags().Changed("gateway") {
		if u := os.Getenv(EnvURL); u != "" {
			url = u
		}
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		url = "http://" + url // as faas-cli does
	}
	user := f.Username
	if !cmd.Flags().Changed("username") {
		if u := os.Getenv(EnvUser); u != "" {
			user = u
		}
	}
	var pass string
	switch {
	case f.PasswordStdin && f.PasswordFile != "":
		return nil, errors.New("--password-stdin and --password-file: give one")
	case f.PasswordStdin:
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<16))
		if err != nil {
			return nil, fmt.Errorf("read the password from stdin: %w", err)
		}
		pass = strings.TrimSpace(string(b))
		if pass == "" {
			return nil, errors.New("--password-stdin: stdin was empty: pipe the password in, e.g. cat basic-auth-password | continuum faas list -s")
		}
	case f.PasswordFile != "":
		b, err := os.ReadFile(f.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("--password-file: %w", err)
		}
		if pass = strings.TrimSpace(string(b)); pass == "" {
			return nil, fmt.Errorf("--password-file %s is empty", f.PasswordFile)
		}
	case os.Getenv(EnvPassword) != "":
		pass = strings.TrimSpace(os.Getenv(EnvPassword))
	case f.SecretPath != "" && (cmd.Flags().Changed("secret-mount-path") || isLocal(url)):
		// The files of a gateway on this machine go only to a gateway on this machine, unless
		// the directory was named: a password must not follow -g to another host unasked.
		c, _, err := gateway.AuthFiles{UserFile: filepath.Join(f.SecretPath, gateway.UserFileName),
			PasswordFile: filepath.Join(f.SecretPath, gateway.PasswordFileName)}.Load()
		if err == nil {
			if !cmd.Flags().Changed("username") && os.Getenv(EnvUser) == "" {
				user = c.User
			}
			pass = c.Password
		}
	}
	var cred *gateway.Credentials
	if pass != "" {
		cred = &gateway.Credentials{User: user, Password: pass}
		if strings.HasPrefix(url, "http://") && !isLocal(url) {
			fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: basic auth over plain http to %s: the password crosses the network readable; serve the gateway with --tls-cert and use https://\n", url)
		}
	}
	return gateway.NewClient(url, cred, f.TLSNoVerify), nil
}

// isLocal reports whether a gateway URL names this machine (a loopback address or localhost).
func isLocal(raw string) bool {
	u, err := neturl.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func newListCmd() *cobra.Command {
	flags := DefaultClientFlags()
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List a gateway's functions with their replicas and invocations (GET /system/functions, with basic auth)",
		Long: `Lists the functions of a gateway (continuum faas gateway, or an OpenFaaS gateway): name,
invocations, wanted and ready replicas. /system/ needs the gateway's basic auth: the password comes
from --password-stdin, --password-file or $OPENFAAS_PASSWORD, else from the secrets directory a
gateway on this machine wrote (--secret-mount-path).`,
		Example: `  continuum faas list
  cat /var/lib/continuum/faas-gateway/secrets/basic-auth-password | continuum faas list -g http://edge1:8080 -s
  OPENFAAS_URL=https://edge1:8443 OPENFAAS_PASSWORD=... continuum faas list --tls-no-verify`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.client(cmd, cmd.InOrStdin())
			if err != nil {
				return err
			}
			fns, err := c.Functions(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "Function\tInvocations\tReplicas\tReady\tScaler")
			for _, f := range fns {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", f.Name, f.InvocationCount, f.Replicas, f.AvailableReplicas, f.Scaler)
			}
			return tw.Flush()
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

func newScaleCmd() *cobra.Command {
	flags := DefaultClientFlags()
	replicas := -1
	cmd := &cobra.Command{
		Use:   "scale NAME --replicas N",
		Short: "Set a function's replicas on a gateway (POST /system/scale-function/NAME, with basic auth)",
		Long: `Asks the gateway for N instances of the function (clamped to its min and max). Credentials
as for continuum faas list.`,
		Example: `  continuum faas scale analytics --replicas 3
  continuum faas scale hello --replicas 0 -g http://edge1:8080 --password-file ./basic-auth-password`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if replicas < 0 {
				return errors.New("--replicas: want the number of instances, 0 or more")
			}
			c, err := flags.client(cmd, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if err := c.Scale(cmd.Context(), args[0], replicas); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "asked for %d replica(s) of %s\n", replicas, args[0])
			return nil
		},
	}
	flags.Bind(cmd.Flags())
	cmd.Flags().IntVar(&replicas, "replicas", replicas, "instances wanted (0 or more)")
	return cmd
}
