package server

import pb "go.etcd.io/etcd/api/v3/etcdserverpb"

type leaseServer struct {
	pb.UnimplementedLeaseServer
	s *Server
}
