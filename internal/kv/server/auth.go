package server

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// authServer answers every Auth call with Unimplemented: Continuum kv has no users or roles;
// secure it with TLS client certificates (--client-cert-auth) instead.
type authServer struct{ pb.UnimplementedAuthServer }

var errAuth = status.Error(codes.Unimplemented,
	"continuum kv: authentication (users, roles) is not implemented; use TLS client certificates (--client-cert-auth) and run clients without --user")

func (authServer) AuthEnable(context.Context, *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return nil, errAuth
}
func (authServer) AuthDisable(context.Context, *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return nil, errAuth
}
func (authServer) AuthStatus(context.Context, *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return nil, errAuth
}
func (authServer) Authenticate(context.Context, *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return nil, errAuth
}
func (authServer) UserAdd(context.Context, *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	return nil, errAuth
}
func (authServer) UserGet(context.Context, *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return nil, errAuth
}
func (authServer) UserList(context.Context, *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return nil, errAuth
}
func (authServer) UserDelete(context.Context, *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return nil, errAuth
}
func (authServer) UserChangePassword(context.Context, *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	return nil, errAuth
}
func (authServer) UserGrantRole(context.Context, *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return nil, errAuth
}
func (authServer) UserRevokeRole(context.Context, *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return nil, errAuth
}
func (authServer) RoleAdd(context.Context, *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return nil, errAuth
}
func (authServer) RoleGet(context.Context, *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return nil, errAuth
}
func (authServer) RoleList(context.Context, *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return nil, errAuth
}
func (authServer) RoleDelete(context.Context, *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return nil, errAuth
}
func (authServer) RoleGrantPermission(context.Context, *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return nil, errAuth
}
func (authServer) RoleRevokePermission(context.Context, *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return nil, errAuth
}
