// Package image builds Continuum's container images without a Docker daemon: OCI images
// assembled from files (the static continuum binaries, a Python runtime taken from this host,
// the Python packages and venvs) with go-containerregistry, written as OCI image layout
// tarballs that `ctr images import` (containerd) and registries' tools take.
//
// Images are reproducible: every file's time is the build's epoch (SOURCE_DATE_EPOCH, else 0),
// owners are numeric, entries are sorted, layers are gzip-compressed by the same code, so the
// same inputs give the same digests. The inputs are what this host holds (the binaries built
// with -trimpath, the Python files), so two hosts agree when those files agree.
//
// What the images are (their names, users, entrypoints, layers) is in recipes.go; Run builds
// the ones asked for. The package knows the repository's layout (python/src, python/functions,
// the venvs make setup builds) but imports no system package.
package image
