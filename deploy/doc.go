// Package deploy holds how Alfred is deployed: the compose files here, and,
// in its tests, the checks of what ships: the bot image (Dockerfile) and the
// agent image (sandbox/images/agent/Dockerfile) that scripts/images.sh builds,
// and the compose files. It has no code of its own.
package deploy
