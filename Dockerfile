# syntax=docker/dockerfile:1
# driftd's container image: the daemon and CLI built without the cluster simulator
# (--no-default-features), on distroless cc (glibc and libgcc, no shell, no package manager),
# running as the distroless `nonroot` user (uid/gid 65532), as deploy/base expects.
#
#   docker build -t driftd:0.1.0 .
#
# Not built by this repository's CI or tests: the build machines have no container engine.
# The binary it builds is the one `.ci/run` builds (`cargo build --locked --no-default-features`).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --no-default-features \
    && install -D -m 0755 target/release/driftd /out/driftd \
    && install -d -m 0750 /out/data

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/driftd /usr/local/bin/driftd
# The database directory, owned by the runtime user (a volume is mounted here in a cluster).
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
EXPOSE 9477
ENTRYPOINT ["driftd"]
# Without a config file: the database on /data, the HTTP server on every interface. In a
# cluster, deploy/base passes `serve --config /etc/driftd/driftd.toml` instead.
CMD ["serve", "--db", "/data/driftd.db", "--listen", "0.0.0.0:9477"]
