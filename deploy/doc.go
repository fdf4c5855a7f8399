// Package deploy holds how Alfred is deployed: the compose files here and the
// Kubernetes manifests in kubernetes/, and, in its tests, the checks of what
// ships: the bot image (Dockerfile) and the agent image
// (sandbox/images/agent/Dockerfile) that scripts/images.sh builds, the
// compose files, and the manifests against the test cluster of
// scripts/k8s.sh (server-side dry run, Pod Security, the bot's Role, and the
// bot started from them). It has no code of its own.
package deploy
