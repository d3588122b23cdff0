package server

import (
	"context"
	"encoding/base64"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// authServer is etcd's Auth service on the member's auth store. Every call but Authenticate,
// UserGet and RoleGet needs the root role while auth is enabled (etcd's needAdminPermission);
// UserGet is also allowed on oneself and RoleGet on a role one holds.
type authServer struct {
	pb.UnimplementedAuthServer
	s *Server
}

// authInfo returns who sends the request (nil: nobody, or auth is off): the user of a valid
// token in the "token" (or "authorization") metadata, else, with --client-cert-auth, the
// common name of the verified client certificate. A token that does not resolve is an error
// ("invalid auth token"), which clientv3 answers by authenticating again.
func (s *Server) authInfo(ctx context.Context) (*authInfo, error) {
	a := s.auth
	if !a.isEnabled() {
		return nil, nil
	}
	// ValueFromIncomingContext reads one key without copying the whole metadata map.
	ts := metadata.ValueFromIncomingContext(ctx, rpctypes.TokenFieldNameGRPC)
	if len(ts) == 0 {
		ts = metadata.ValueFromIncomingContext(ctx, rpctypes.TokenFieldNameSwagger)
	}
	if len(ts) > 0 {
		ai, ok := a.tokens.info(strings.TrimPrefix(ts[0], "Bearer "), a.rev())
		if !ok {
			return nil, rpctypes.ErrGRPCInvalidAuthToken
		}
		return &ai, nil
	}
	if s.cfg.ClientCertAuth {
		return s.authInfoFromTLS(ctx), nil
	}
	return nil, nil
}

// authInfoFromTLS is the first verified chain's leaf common name, as etcd takes it; a
// request through a gRPC gateway (which uses its own certificate) is nobody.
func (s *Server) authInfoFromTLS(ctx context.Context) *authInfo {
	p, ok := peer.FromContext(ctx)
	if !ok || p == nil {
		return nil
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil
	}
	for _, chain := range ti.State.VerifiedChains {
		if len(chain) == 0 {
			continue
		}
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md["grpcgateway-accept"]) > 0 {
			return nil
		}
		return &authInfo{user: chain[0].Subject.CommonName, rev: s.auth.rev()}
	}
	return nil
}

// checkAdmin is etcd's AuthAdmin.isPermitted: root role required while auth is enabled.
func (s *Server) checkAdmin(ctx context.Context) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.authInfo(ctx)
	if err != nil {
		return err
	}
	return s.auth.adminPermitted(ai)
}

// requireUser is etcd's requireAuthInfo: any authenticated user (Status, Alarm GET).
func (s *Server) requireUser(ctx context.Context) error {
	if !s.auth.isEnabled() {
		return nil
	}
	ai, err := s.authInfo(ctx)
	if err != nil {
		return err
	}
	if ai == nil {
		return rpctypes.ErrGRPCUserEmpty
	}
	return nil
}

// checkAuthChange gates every call that changes the auth store: the caller must be root (while
// auth is enabled), and the member must have heard from a majority of the cluster within
// --auth-majority-timeout, whether auth is enabled or not. The store replicates whole, the
// copy with the largest revision winning (authreplicate.go), so a change made on a member cut
// off from the majority would, after the heal, replace every change the majority made
// meanwhile: a revocation would be undone, or auth disabled. The gate is the one KV writes
// pass through while auth is enabled.
func (s *Server) checkAuthChange(ctx context.Context) error {
	if err := s.checkAdmin(ctx); err != nil {
		return err
	}
	return s.checkMajority(authChangeRefused)
}

func (as *authServer) header() *pb.ResponseHeader {
	h := &pb.ResponseHeader{}
	as.s.fill(h)
	return h
}

func (as *authServer) AuthEnable(ctx context.Context, _ *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.enable(); err != nil {
		return nil, err
	}

	return &pb.AuthEnableResponse{Header: as.header()}, nil
}

func (as *authServer) AuthDisable(ctx context.Context, _ *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.disable(); err != nil {
		return nil, err
	}
	return &pb.AuthDisableResponse{Header: as.header()}, nil
}

func (as *authServer) AuthStatus(ctx context.Context, _ *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	if err := as.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	resp := as.s.auth.status()
	as.s.fill(resp.Header)
	return resp, nil
}

// Authenticate checks the password (bcrypt, outside the store's lock) and issues a token at
// the revision the password was checked at; if the store changed meanwhile it checks again,
// as etcd does, so a token never outlives a password change it raced with.
func (as *authServer) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	a := as.s.auth
	for {
		rev, err := a.checkPassword(r.Name, r.Password)
		if err != nil {
			as.s.log.Warn("invalid authentication was requested", "user", r.Name, "error", err)
			return nil, err
		}
		tok, err := a.tokens.assign(r.Name, rev)
		if err != nil {
			return nil, rpctypes.ErrGRPCInvalidAuthMgmt
		}
		if rev == a.rev() {
			return &pb.AuthenticateResponse{Header: as.header(), Token: tok}, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, togRPCError(err)
		}
	}
}

// password returns the bcrypt hash to store: the request's hashed_password (base64, as
// etcdctl 3.5+ and clientv3 never send it, but etcd accepts it) or a new hash of password.
func (as *authServer) password(password, hashed string) ([]byte, error) {
	if hashed != "" {
		b, err := base64.StdEncoding.DecodeString(hashed)
		if err != nil {
			return nil, errNoPasswordUser
		}
		if _, err := bcrypt.Cost(b); err != nil {
			return nil, rpctypes.ErrGRPCInvalidAuthMgmt
		}
		return b, nil
	}
	return as.s.auth.hashPassword(password)
}

func (as *authServer) UserAdd(ctx context.Context, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	var hash []byte
	if r.Options == nil || !r.Options.NoPassword {
		var err error
		if hash, err = as.password(r.Password, r.HashedPassword); err != nil {
			return nil, err
		}
	}
	if err := as.s.auth.userAdd(r.Name, hash, r.Options); err != nil {
		return nil, err
	}
	return &pb.AuthUserAddResponse{Header: as.header()}, nil
}

func (as *authServer) UserGet(ctx context.Context, r *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	if err := as.s.checkAdmin(ctx); err != nil {
		ai, _ := as.s.authInfo(ctx)
		if ai == nil || ai.user != r.Name {
			return nil, err
		}
	}
	roles, err := as.s.auth.userGet(r.Name)
	if err != nil {
		return nil, err
	}
	return &pb.AuthUserGetResponse{Header: as.header(), Roles: roles}, nil
}

func (as *authServer) UserList(ctx context.Context, _ *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	if err := as.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	return &pb.AuthUserListResponse{Header: as.header(), Users: as.s.auth.userList()}, nil
}

func (as *authServer) UserDelete(ctx context.Context, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.userDelete(r.Name); err != nil {
		return nil, err
	}
	return &pb.AuthUserDeleteResponse{Header: as.header()}, nil
}

func (as *authServer) UserChangePassword(ctx context.Context, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	hash, err := as.password(r.Password, r.HashedPassword)
	if err != nil {
		return nil, err
	}
	if err := as.s.auth.userChangePassword(r.Name, hash); err != nil {
		return nil, err
	}
	return &pb.AuthUserChangePasswordResponse{Header: as.header()}, nil
}

func (as *authServer) UserGrantRole(ctx context.Context, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.userGrantRole(r.User, r.Role); err != nil {
		return nil, err
	}
	return &pb.AuthUserGrantRoleResponse{Header: as.header()}, nil
}

func (as *authServer) UserRevokeRole(ctx context.Context, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.userRevokeRole(r.Name, r.Role); err != nil {
		return nil, err
	}
	return &pb.AuthUserRevokeRoleResponse{Header: as.header()}, nil
}

func (as *authServer) RoleAdd(ctx context.Context, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.roleAdd(r.Name); err != nil {
		return nil, err
	}
	return &pb.AuthRoleAddResponse{Header: as.header()}, nil
}

func (as *authServer) RoleGet(ctx context.Context, r *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	if err := as.s.checkAdmin(ctx); err != nil {
		ai, _ := as.s.authInfo(ctx)
		if ai == nil || !as.s.auth.hasRole(ai.user, r.Role) {
			return nil, err
		}
	}
	perms, err := as.s.auth.roleGet(r.Role)
	if err != nil {
		return nil, err
	}
	return &pb.AuthRoleGetResponse{Header: as.header(), Perm: perms}, nil
}

func (as *authServer) RoleList(ctx context.Context, _ *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	if err := as.s.checkAdmin(ctx); err != nil {
		return nil, err
	}
	return &pb.AuthRoleListResponse{Header: as.header(), Roles: as.s.auth.roleList()}, nil
}

func (as *authServer) RoleDelete(ctx context.Context, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.roleDelete(r.Role); err != nil {
		return nil, err
	}
	return &pb.AuthRoleDeleteResponse{Header: as.header()}, nil
}

func (as *authServer) RoleGrantPermission(ctx context.Context, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.roleGrantPermission(r.Name, r.Perm); err != nil {
		return nil, err
	}
	return &pb.AuthRoleGrantPermissionResponse{Header: as.header()}, nil
}

func (as *authServer) RoleRevokePermission(ctx context.Context, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	if err := as.s.checkAuthChange(ctx); err != nil {
		return nil, err
	}
	if err := as.s.auth.roleRevokePermission(r.Role, r.Key, r.RangeEnd); err != nil {
		return nil, err
	}
	return &pb.AuthRoleRevokePermissionResponse{Header: as.header()}, nil
}
