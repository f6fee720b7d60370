# syntax=docker/dockerfile:1
# droidpilot in a container. Multi-stage: build with the full toolchain, run on a slim
# Debian with only adb and CA certificates, as a non-root user.
#
#   docker build -t droidpilot .
#   docker run -p 8080:8080 -e DROIDPILOT_SERVER__TOKENS=$(openssl rand -hex 32) droidpilot
#
# Inside a container the server must bind 0.0.0.0 to be reachable, so a token is
# required (the server refuses to start without one on a non-loopback address).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The registry and target/ are BuildKit caches, so a source edit rebuilds only the crates
# it touches (the workspace's crates are the layers: an edit in a front end leaves the
# core, the sim and the store built).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin droidpilot \
    && cp target/release/droidpilot /usr/local/bin/droidpilot

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends adb ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/droidpilot --uid 10001 droidpilot
COPY --from=build /usr/local/bin/droidpilot /usr/local/bin/droidpilot
USER droidpilot
WORKDIR /var/lib/droidpilot
ENV DROIDPILOT_SERVER__BIND=0.0.0.0:8080 \
    DROIDPILOT_STORAGE__DATA_DIR=/var/lib/droidpilot/data \
    DROIDPILOT_LOG__FORMAT=json
VOLUME ["/var/lib/droidpilot/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["droidpilot"]
CMD ["serve"]
