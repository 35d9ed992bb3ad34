// Package deploytest checks the deployment files against the code they deploy: the
// Dockerfile (stages, a static CGO_ENABLED=0 build of ./cmd/trending, a non-root user), the
// compose file (infra/compose) and the Kubernetes manifests (infra/k8s). Every command a
// container runs must be a real `trending` subcommand whose flags exist, every TRENDING_*
// variable must be a flag of that subcommand or a global one, and no credential may be
// written in them. It also runs the binary with secrets set and greps its logs for them.
//
// The checks build the binary with the Dockerfile's own build command, so a Dockerfile that
// stops building fails here before it fails in CI's image build. There is no code in this
// package; it is all tests.
package deploytest
