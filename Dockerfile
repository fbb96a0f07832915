# The atomwatch collector image. Two stages: one that builds with the -dev packages, one that
# runs with only the runtime libraries (and gnuplot-nox for the charts), as a non-root user,
# its state in the /var/lib/atomwatch volume.
#
#   sh ../shared/tools/container-setup.sh        # where no Docker engine or registry is at hand
#   podman build --pull=never --format docker -t atomwatch-collector .
#   podman run -d -p 8080:8080 -v atomwatch:/var/lib/atomwatch atomwatch-collector
#   podman exec <container> atomwatch-collector token create \
#       --db sqlite:/var/lib/atomwatch/atomwatch.db --role agent --host graviton4-a
#
# The same build works with `docker build`. HEALTHCHECK needs the docker image format
# (podman: --format docker).

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
 && cmake --build /build --target atomwatch-collector -j "$(nproc)" \
 && install -D -m 0755 /build/collector/atomwatch-collector /out/usr/bin/atomwatch-collector \
 && install -D -m 0644 configs/collector.yaml /out/etc/atomwatch/collector.yaml

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
