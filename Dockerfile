# syntax=docker/dockerfile:1

# Build stage. Dependencies are compiled in their own layer from the manifests
# and a placeholder crate, so editing src/ only rebuilds function-inference.
FROM rust:1.89-bookworm AS build
WORKDIR /build

COPY Cargo.toml Cargo.lock build.rs ./
COPY proto ./proto
RUN mkdir src \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && cargo build --release --locked \
 && rm -rf src

COPY src ./src
# Cargo compares mtimes; make sure the real sources are newer than the
# placeholder build.
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && cp target/release/function-inference /function-inference

# Runtime stage: glibc and libgcc only, no shell, non-root (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /function-inference /function-inference
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/function-inference"]
