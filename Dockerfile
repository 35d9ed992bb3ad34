# syntax=docker/dockerfile:1
# The trending image: one static binary (every role is a subcommand) and the health-check
# probe, on a distroless base with no shell, running as a non-root user.
#
#   docker build -t trending:dev --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) .
#   docker run --rm trending:dev plan
#
# infra/deploytest checks this file: the stages, CGO_ENABLED=0, the user, and that the same
# build command builds a static binary from ./cmd/trending.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/trending ./cmd/trending && \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/probe ./infra/docker/probe

# distroless/static: CA certificates (S3, Kafka and ClickHouse over TLS) and tzdata, no shell.
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/trending /usr/local/bin/trending
COPY --from=build /out/probe /usr/local/bin/probe
# nonroot is uid 65532 in distroless; numeric so Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080 9464 9465 9466
ENTRYPOINT ["/usr/local/bin/trending"]
CMD ["--help"]
