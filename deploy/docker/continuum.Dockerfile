# The continuum image with Docker, for users who build that way (`continuum image build` makes the
# same image without a Docker daemon; docs/kubernetes.md, "Images"). Not built by this project's
# tests: there is no Docker daemon where they run.
#
#   docker build -f deploy/docker/continuum.Dockerfile -t continuum-project/continuum:0.1.0-dev .
#   docker build -f deploy/docker/continuum.Dockerfile --target pause -t continuum-project/continuum-pause:0.1.0-dev .
#
# Same layout as the daemonless image: /usr/local/bin/continuum, user 65532 ("continuum"),
# home /home/continuum, CA certificates.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/continuum-project/continuum/internal/version.Commit=${COMMIT}" \
      -o /out/continuum ./cmd/continuum && \
    mkdir -p /out/etc /out/home/continuum /out/tmp && chmod 1777 /out/tmp && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\ncontinuum:x:65532:65532:continuum:/home/continuum:/sbin/nologin\n' > /out/etc/passwd && \
    printf 'root:x:0:\ncontinuum:x:65532:\n' > /out/etc/group

FROM scratch AS continuum
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/etc/ /etc/
COPY --from=build --chown=65532:65532 /out/home/ /home/
COPY --from=build /out/tmp /tmp
COPY --from=build /out/continuum /usr/local/bin/continuum
USER 65532:65532
WORKDIR /home/continuum
ENTRYPOINT ["/usr/local/bin/continuum"]

# The pods' sandbox ("pause") image of the one-node cluster: the same binary.
FROM continuum AS pause
WORKDIR /
ENTRYPOINT ["/usr/local/bin/continuum", "cluster", "pause"]

FROM continuum
