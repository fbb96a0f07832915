# The atomwatch images. A build stage with the -dev packages; a collector stage (the default,
# last) with only the runtime libraries and gnuplot-nox for the charts, as a non-root user, its
# state in the /var/lib/atomwatch volume; and an agent stage (--target agent).
#
#   sh scripts/container-setup.sh                # as root, where no Docker engine or registry
#                                                # is at hand: podman, runc, a local
#                                                # debian:bookworm made with debootstrap
#   podman build --pull=never --format docker -t atomwatch-collector .
#   podman run -d -p 8080:8080 -v atomwatch:/var/lib/atomwatch atomwatch-collector
#   podman exec <container> atomwatch-collector token create \
#       --db sqlite:/var/lib/atomwatch/atomwatch.db --role agent --host graviton4-a
#
# The same build works with `docker build`. HEALTHCHECK needs the docker image format
# (podman: --format docker). The agent image measures the machine it runs on; give it its
# config and token and pin nothing else on those CPUs:
#   podman build --pull=never --target agent -t atomwatch-agent .
#   podman run -d -v /etc/atomwatch:/etc/atomwatch:ro -v atomwatch-spool:/var/lib/atomwatch \
#       atomwatch-agent daemon

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential cmake pkg-config libjansson-dev libyaml-dev libssl-dev \
      libcurl4-openssl-dev libmicrohttpd-dev libsqlite3-dev libpq-dev liburcu-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAW_BUILD_TESTS=OFF \
      -DAW_BUILD_BENCH=OFF \
 && cmake --build /build --target atomwatch-collector atomwatch-agent -j "$(nproc)" \
 && install -D -m 0755 /build/collector/atomwatch-collector /out/usr/bin/atomwatch-collector \
 && install -D -m 0644 configs/collector.yaml /out/etc/atomwatch/collector.yaml \
 && install -D -m 0755 /build/agents/atomwatch-agent /out-agent/usr/bin/atomwatch-agent \
 && install -D -m 0644 configs/agent.yaml /out-agent/usr/share/atomwatch/agent.yaml

FROM debian:bookworm AS agent
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libjansson4 libyaml-0-2 libssl3 libcurl4 liburcu8 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --home-dir /var/lib/atomwatch --shell /usr/sbin/nologin \
      atomwatch \
 && install -d -o atomwatch -g atomwatch -m 0750 /var/lib/atomwatch /var/lib/atomwatch/spool
COPY --from=build /out-agent/ /
USER atomwatch
WORKDIR /var/lib/atomwatch
VOLUME /var/lib/atomwatch
ENTRYPOINT ["atomwatch-agent"]
CMD ["--help"]

FROM debian:bookworm AS collector
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libjansson4 libyaml-0-2 libssl3 libmicrohttpd12 libsqlite3-0 libpq5 gnuplot-nox \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --user-group --home-dir /var/lib/atomwatch --shell /usr/sbin/nologin \
      atomwatch \
 && install -d -o atomwatch -g atomwatch -m 0750 /var/lib/atomwatch
COPY --from=build /out/ /
USER atomwatch
WORKDIR /var/lib/atomwatch
VOLUME /var/lib/atomwatch
EXPOSE 8080
# No HTTP client in the image: bash's /dev/tcp asks /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["atomwatch-collector"]
CMD ["serve", "--config", "/etc/atomwatch/collector.yaml"]
