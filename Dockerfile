# Alfred's service image: one static binary plus git and CA certificates.
# Build: docker build -t alfred .   (agent CLIs run in a separate image:
# see sandbox/images/agent/Dockerfile)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/alfred .

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/alfred --create-home alfred
COPY --from=build /out/alfred /usr/local/bin/alfred
USER alfred
WORKDIR /var/lib/alfred
ENV ALFRED_LISTEN=0.0.0.0:8080 \
    ALFRED_STATE_DIR=/var/lib/alfred/state.git \
    ALFRED_LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD ["/usr/local/bin/alfred", "version"]
ENTRYPOINT ["/usr/local/bin/alfred"]
CMD ["serve"]
