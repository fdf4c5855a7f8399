# Alfred's service image: the static binary, git and CA certificates on Debian,
# run as the non-root user `alfred`. The agent CLIs run in a separate image
# (sandbox/images/agent/Dockerfile).
#
# Two ways to build it, same final image:
#
#   docker build -t alfred .
#       the default (last) stage, `image`: compiles the binary in GO_IMAGE.
#       This is the build for anyone who can pull golang and debian images.
#
#   make build && docker build --target prebuilt -t alfred .
#       copies the binary that `make build` left in bin/alfred (CGO_ENABLED=0,
#       static) instead of compiling it here. Alfred's own suite builds this way
#       (scripts/images.sh): no registry is reachable there, so there is no Go
#       image, and compiling in a build step, where Docker keeps no Go build
#       cache, takes minutes each time the source changes against seconds for
#       the machine's warm `go build`. `prebuilt` comes before the Go stage so
#       Docker's legacy builder, which builds every stage up to the target,
#       never needs GO_IMAGE for it. The flip side: the legacy builder (Debian
#       12's docker.io without DOCKER_BUILDKIT=1) also builds `prebuilt` on the
#       way to the default stage, so there run `make build` first, or set
#       DOCKER_BUILDKIT=1; BuildKit (Docker 23 and later) skips unused stages.
#
# The base images are build arguments: the defaults are the public images;
# scripts/images.sh passes a Debian image it made with debootstrap
# (scripts/base-image.sh). VERSION ends up in `alfred version` and the labels.
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

# runtime: everything of the final image but the binary.
FROM ${BASE_IMAGE} AS runtime
# The bot's user has the uid:gid of the agent containers (ALFRED_AGENT_USER,
# default 1000:1000, the agent image's `agent`): agents write in the working
# copies and session folders the bot creates, and a bot that is not root
# cannot hand them over with chown, so both must be the same user.
ARG ALFRED_UID=1000
ARG ALFRED_GID=1000
RUN apt-get update \
        || { echo "bot image: apt-get update failed" >&2; exit 1; }; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates git \
        || { echo "bot image: apt-get install of git and ca-certificates failed" >&2; exit 1; }; \
    rm -rf /var/lib/apt/lists/* \
 && groupadd --gid "${ALFRED_GID}" alfred \
 && useradd --uid "${ALFRED_UID}" --gid "${ALFRED_GID}" --home-dir /var/lib/alfred --create-home \
        --shell /usr/sbin/nologin alfred
LABEL org.opencontainers.image.title="alfred" \
      org.opencontainers.image.description="Alfred: a self-hosted forge bot that works issues with coding-agent CLIs" \
      org.opencontainers.image.source="https://github.com/alchemic-studio/alfred"
USER ${ALFRED_UID}:${ALFRED_GID}
WORKDIR /var/lib/alfred
# The state repository and the data folder live under /var/lib/alfred unless
# the deployment says otherwise (deploy/compose.yaml mounts the data folder at
# its host path).
ENV ALFRED_LISTEN=0.0.0.0:8080 \
    ALFRED_STATE_DIR=/var/lib/alfred/state.git \
    ALFRED_DATA_DIR=/var/lib/alfred/data \
    ALFRED_LOG_FORMAT=json
EXPOSE 8080
# GET /healthz on the port of ALFRED_LISTEN, with bash's /dev/tcp: the image
# has no curl or wget, and needs none.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["bash", "-c", "h=${ALFRED_LISTEN%:*}; h=${h#[}; h=${h%]}; case $h in ''|0.0.0.0|::) h=127.0.0.1;; esac; exec 3<>\"/dev/tcp/$h/${ALFRED_LISTEN##*:}\" && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]"]
ENTRYPOINT ["/usr/local/bin/alfred"]
CMD ["serve"]

# prebuilt: the binary built outside (make build), see above.
FROM runtime AS prebuilt
COPY bin/alfred /usr/local/bin/alfred
ARG VERSION=dev
LABEL org.opencontainers.image.version="${VERSION}"

# build: compiles the static binary; nothing of it reaches the final image.
FROM ${GO_IMAGE} AS build
# BUILD_CA_CERTS: PEM certificates to trust while downloading modules, for a
# network behind a TLS-intercepting proxy (scripts/images.sh passes the ones
# in this machine's /usr/local/share/ca-certificates); empty by default. This
# stage is thrown away, so they never reach the image.
ARG BUILD_CA_CERTS=""
WORKDIR /src
COPY go.mod go.sum ./
RUN if [ -n "$BUILD_CA_CERTS" ]; then \
        mkdir -p /tmp/build-ca && printf '%s\n' "$BUILD_CA_CERTS" >/tmp/build-ca/extra.pem \
        && export SSL_CERT_DIR=/etc/ssl/certs:/tmp/build-ca; \
    fi \
 && go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" -o /out/alfred .

# image (the default): the runtime plus the binary compiled above.
FROM runtime AS image
COPY --from=build /out/alfred /usr/local/bin/alfred
ARG VERSION=dev
LABEL org.opencontainers.image.version="${VERSION}"
