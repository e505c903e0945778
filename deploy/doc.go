// Package deploy holds no code: its tests check what the repository
// deploys the daemon with, as CI can without a registry or a cluster. The
// Dockerfile parses with buildkit's own parser, builds on the Go version
// go.mod names, runs as a non-root user on a C library image and stamps
// the version; the Kubernetes manifests (kubernetes/) decode as the
// k8s.io/api objects they claim to be, run the image make image builds,
// and pass codemode serve only flags and values the binary accepts.
//
// It is a module of its own, outside the workspace (its dependencies,
// buildkit's among them, need a newer Go than the library's go.mod
// names): make test runs it with GOWORK=off.
package deploy
