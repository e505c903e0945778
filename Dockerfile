# syntax=docker/dockerfile:1
# The daemon's image (make image): codemode serve, built with cgo (the
# QuickJS-ng engine is C) on the Go version go.mod names, and run as a
# non-root user on distroless's C library image (glibc and libgcc, no
# shell, no package manager). VERSION is stamped into the binary
# (codemode version).

FROM golang:1.26-bookworm AS build
WORKDIR /src
# The modules' files first, so a change of source alone reuses the
# downloaded modules.
COPY go.work go.work.sum go.mod go.sum ./
COPY typescript/go.mod typescript/go.sum typescript/
COPY remote/go.mod remote/go.sum remote/
COPY mcp/go.mod mcp/go.sum mcp/
COPY otel/go.mod otel/go.sum otel/
COPY cmd/codemode/go.mod cmd/codemode/go.sum cmd/codemode/
COPY adapters/ adapters/
COPY bench/go.mod bench/go.sum bench/
COPY examples/go.mod examples/go.sum examples/
RUN --mount=type=cache,target=/go/pkg/mod cd cmd/codemode && go mod download
COPY . .
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/codemode ./cmd/codemode && \
    /out/codemode version

FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=devel
LABEL org.opencontainers.image.title="codemode" \
      org.opencontainers.image.description="codemode serve: the Code Mode daemon" \
      org.opencontainers.image.source="https://github.com/codemode-go/codemode" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/codemode /usr/local/bin/codemode
USER nonroot:nonroot
EXPOSE 7070 9090
ENTRYPOINT ["/usr/local/bin/codemode"]
CMD ["serve", "--listen=:7070"]
