package kinds

import (
	"fmt"
	"strconv"

	"github.com/continuum-project/continuum/internal/cli"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/spec"
	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
	"github.com/continuum-project/continuum/internal/stream/streamcmd"
)

func init() {
	kind.Register(kind.Def[RealtimeDBConfig]{
		Name:     "realtime-db",
		System:   "stream",
		Role:     kind.RoleComponent,
		Summary:  "Firebase-compatible realtime database (REST) storing its JSON tree in a kv or etcd component",
		Defaults: func() *RealtimeDBConfig { return &RealtimeDBConfig{Port: 9000} },
		Validate: (*RealtimeDBConfig).validate,
		Command:  realtimeDBCommand,
		Endpoints: func(c *RealtimeDBConfig) []kind.Endpoint {
			return []kind.Endpoint{{Name: "http", Protocol: kind.ProtocolHTTP, Port: c.Port}}
		},
	})
}

// RealtimeDBConfig is the `config:` of a realtime-db component.
type RealtimeDBConfig struct {
	Port  int    `yaml:"port"`  // default 9000
	Store string `yaml:"store"` // the kv or etcd component holding the data (required)
	// MaxBodyBytes bounds a write's body (default: the server's, 16 MiB).
	MaxBodyBytes spec.Bytes `yaml:"max_body_bytes"`
	// Rules is a security rules file (on the node) for every database; none: everything allowed.
	Rules string `yaml:"rules"`
	// AuthSecrets are database secrets (admin credentials that bypass the rules).
	AuthSecrets []string `yaml:"auth_secrets"`
	// Emulator makes "owner" an admin and accepts unsigned ID tokens, as the Firebase emulator.
	Emulator bool `yaml:"emulator"`
	// ProjectID and JWTKeys (a file on the node) let Firebase ID tokens in.
	ProjectID string `yaml:"project_id"`
	JWTKeys   string `yaml:"jwt_keys"`
}

// validate reports every problem at once, each with its key and the `continuum stream
// realtime-db` flag it becomes.
func (c *RealtimeDBConfig) validate() error {
	var errs kind.FieldErrors
	errs.CheckPort("port", "--listen", c.Port)
	if c.Store == "" {
		errs.Add("store", "--endpoints", "required: the kv or etcd component holding the data")
	}
	if c.MaxBodyBytes < 0 {
		errs.Add("max_body_bytes", "--max-body-bytes", "%d: must be >= 0 (0: the default)", c.MaxBodyBytes)
	}
	if c.JWTKeys != "" && c.ProjectID == "" {
		errs.Add("jwt_keys", "--jwt-keys", "jwt_keys needs project_id: the audience ID tokens must carry")
	}
	return errs.Err()
}

func realtimeDBCommand(env kind.Env, c *RealtimeDBConfig) (kind.Command, error) {
	st, err := env.Store(c.Store, 0, kind.ProtocolEtcdV3)
	if err != nil {
		return kind.Command{}, fmt.Errorf("store: %w", err)
	}
	port := strconv.Itoa(c.Port)
	f := streamcmd.DefaultFlags()
	f.Config.ListenAddr = ":" + port
	f.Config.KVEndpoints = []string{st.Addr}
	if c.MaxBodyBytes > 0 {
		f.Config.MaxBodyBytes = int64(c.MaxBodyBytes)
	}
	f.Config.Security = auth.Security{RulesFile: c.Rules, AuthSecrets: c.AuthSecrets, Emulator: c.Emulator,
		ProjectID: c.ProjectID, JWTKeysFile: c.JWTKeys}
	return kind.Command{Args: append([]string{env.Binary, "stream", "realtime-db"}, cli.Args(streamcmd.DefaultFlags(), f)...), ReadyAddr: "127.0.0.1:" + port}, nil
}
