# wsgateway image: a static binary on distroless, as a non-root user.
#   docker build -t wsgateway .
#   docker run -e LB_JWT_SECRET=… -p 8080:8080 wsgateway
# Configuration is by environment (every flag has an LB_ twin, see --help).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo), no local paths in the binary; -buildvcs=false because the
# build context carries no .git (the version comes from the module).
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/wsgateway ./cmd/wsgateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/wsgateway /usr/local/bin/wsgateway
USER nonroot:nonroot
ENV LB_ADDR=:8080
EXPOSE 8080
# The image has no shell or curl: the binary probes itself (GET /healthz on
# LB_ADDR). Readiness (/readyz) is the load balancer's business, not this.
HEALTHCHECK --interval=10s --timeout=4s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/wsgateway", "healthcheck"]
# SIGTERM drains (close 1001 spread over a second, within LB_DRAIN_TIMEOUT).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/wsgateway"]
