package server

import pb "go.etcd.io/etcd/api/v3/etcdserverpb"

type watchServer struct {
	pb.UnimplementedWatchServer
	s *Server
}
