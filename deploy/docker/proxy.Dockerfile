# The continuum-proxy image (the per-node proxy DaemonSet) with Docker; `continuum image build`
# makes the same image without a Docker daemon. Not built by this project's tests (no Docker).
#
#   docker build -f deploy/docker/proxy.Dockerfile -t continuum-project/continuum-proxy:0.1.0-dev .
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/continuum-project/continuum/internal/version.Commit=${COMMIT}" \
      -o /out/continuum-proxy ./cmd/continuum-proxy && \
    mkdir -p /out/etc && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\ncontinuum:x:65532:65532:continuum:/home/continuum:/sbin/nologin\n' > /out/etc/passwd && \
    printf 'root:x:0:\ncontinuum:x:65532:\n' > /out/etc/group

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc/ /etc/
COPY --from=build /out/continuum-proxy /usr/local/bin/continuum-proxy
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/continuum-proxy"]
