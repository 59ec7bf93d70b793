# Hindsight node image: `docker build -t hindsight .` then see docker-compose.yml for a cluster.
FROM rust:1.88-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p hindsight-cli && strip target/release/hindsight

FROM debian:bookworm-slim
# curl serves the healthchecks; ca-certificates lets the node fetch its embedding model over HTTPS.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/hindsight hindsight \
    && mkdir -p /var/lib/hindsight /models && chown hindsight /var/lib/hindsight /models
COPY --from=build /src/target/release/hindsight /usr/local/bin/hindsight
USER hindsight
WORKDIR /var/lib/hindsight
# Inside a container the node must listen beyond loopback; peers and clients reach it by name.
ENV HINDSIGHT_NODE_DATA_DIR=/var/lib/hindsight/data \
    HINDSIGHT_NODE_GRPC_ADDR=0.0.0.0:7400 \
    HINDSIGHT_NODE_HTTP_ADDR=0.0.0.0:7401 \
    HINDSIGHT_MODEL_DIR=/models
EXPOSE 7400 7401
VOLUME ["/var/lib/hindsight", "/models"]
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=12 \
    CMD curl -fsS http://127.0.0.1:7401/ready || exit 1
ENTRYPOINT ["hindsight"]
CMD ["serve"]
