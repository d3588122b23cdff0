package server

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/archive"
	"github.com/continuum-project/continuum/internal/kv/mvcc"
)

// Snapshots (etcd's Maintenance.Snapshot, `etcdctl snapshot save`).
//
// A snapshot is a tar archive of a consistent copy of the store (an mvcc checkpoint, and the
// auth store's auth.json when users or roles were ever configured) followed by
// the SHA-256 of the archive, as etcd sends its bbolt file followed by its SHA-256: etcdctl checks
// that the size is a multiple of 512 plus 32 bytes, which a tar archive (512-byte blocks) meets.
// It is not a bbolt file, so etcdutl cannot restore it: `continuum kv snapshot restore` does.

const snapshotChunk = 32 << 10

func (m *maintenanceServer) Snapshot(_ *pb.SnapshotRequest, srv pb.Maintenance_SnapshotServer) error {
	s := m.s
	if err := s.checkAdmin(srv.Context()); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "continuum-kv-snapshot-")
	if err != nil {
		return status.Errorf(codes.Internal, "snapshot: %v", err)
	}
	defer os.RemoveAll(tmp)
	header := &pb.ResponseHeader{ClusterId: s.clusterID, MemberId: s.memberID, Revision: s.store.Rev(), RaftTerm: raftTerm}
	if err := s.store.Checkpoint(filepath.Join(tmp, "store")); err != nil {
		return status.Errorf(codes.Internal, "snapshot: checkpoint: %v", err)
	}
	// Users, roles and permissions travel with the data, as in etcd's snapshot (its bbolt file
	// holds them): restored beside the store, they are the restored member's auth store.
	if b := s.auth.encoded.Load(); b != nil {
		if err := os.WriteFile(filepath.Join(tmp, "store", authFile), *b, 0o600); err != nil {
			return status.Errorf(codes.Internal, "snapshot: %v", err)
		}
	}
	archive := filepath.Join(tmp, "snapshot.tar")
	if err := writeTar(archive, filepath.Join(tmp, "store")); err != nil {
		return status.Errorf(codes.Internal, "snapshot: %v", err)
	}
	f, err := os.Open(archive)
	if err != nil {
		return status.Errorf(codes.Internal, "snapshot: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return status.Errorf(codes.Internal, "snapshot: %v", err)
	}
	total, sent := fi.Size(), int64(0)
	h := sha256.New()
	buf := make([]byte, snapshotChunk)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			h.Write(buf[:n])
			sent += int64(n)
			resp := &pb.SnapshotResponse{Header: header, RemainingBytes: uint64(total - sent), Blob: buf[:n], Version: Version}
			if err := srv.Send(resp); err != nil {
				return err
			}
			header = nil // only the first message carries it, as etcd's
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return status.Errorf(codes.Internal, "snapshot: read: %v", err)
		}
	}
	return srv.Send(&pb.SnapshotResponse{Blob: h.Sum(nil), Version: Version})
}

// writeTar archives the files of dir (flat, as a checkpoint is) into path.
func writeTar(path, dir string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// RestoreSnapshot restores a snapshot file written by `etcdctl snapshot save` from a continuum
// kv member into dataDir, which must be empty or absent. It checks the trailing SHA-256 first.
// The restored member gets a member id of its own, and no membership (start it with the
// cluster flags it should have).
func RestoreSnapshot(file, dataDir string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(b) < sha256.Size || (len(b)-sha256.Size)%512 != 0 {
		return fmt.Errorf("%s: not a continuum kv snapshot (%d bytes: want a tar archive and its SHA-256)", file, len(b))
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return fmt.Errorf("%s: SHA-256 mismatch: the snapshot is corrupt or truncated", file)
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("--data-dir %s is not empty: restore into a new directory", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	// A snapshot holds the store's files, flat: anything else is refused before a byte is
	// written; the files are then written through the extraction routine every archive takes.
	tr := tar.NewReader(bytes.NewReader(body))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		name := filepath.Clean(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || name != filepath.Base(name) || name == "." || name == ".." {
			return fmt.Errorf("%s: unexpected entry %q in a snapshot (want the store's files)", file, hdr.Name)
		}
		if archive.Sparse(hdr) { // typeflag '0' too, but its holes would be written as zeros
			return fmt.Errorf("%s: entry %q is a sparse file; a snapshot holds the store's files whole", file, hdr.Name)
		}
	}
	// The files hold no more than the snapshot carries (sparse files refused): its size bounds
	// what the restore writes.
	if err := archive.Extract(bytes.NewReader(body), dataDir, archive.Policy{Sync: true, MaxBytes: int64(len(body))}); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return mvcc.RestoredCopy(dataDir)
}
