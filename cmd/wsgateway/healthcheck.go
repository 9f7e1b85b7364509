package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheckCmd GETs a local gateway's /healthz and fails unless it answers
// 200: the container image has no curl, so its HEALTHCHECK runs the binary
// itself. It reads LB_ADDR like the gateway, so the same environment that
// configured the server points the probe at it.
func healthcheckCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		addr, path string
		timeout    time.Duration
	)
	f := newFlagSet("wsgateway healthcheck", getenv, stderr)
	f.String(&addr, "addr", ":8080", "the gateway's listen address; an empty or unspecified host means 127.0.0.1")
	f.StringVar(&path, "path", "/healthz", "path to GET (/readyz also checks the store and NATS)")
	f.DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	if err := f.parse(args); err != nil {
		return flagError(err)
	}
	url, err := probeURL(addr, path)
	if err != nil {
		return usageError("healthcheck: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageError("healthcheck: " + err.Error())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s: %s", url, resp.Status)
	}
	_, err = fmt.Fprintf(stdout, "ok: GET %s: %s\n", url, resp.Status)
	return err
}

// probeURL turns a listen address into the URL a local probe dials.
func probeURL(addr, path string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if len(path) == 0 || path[0] != '/' {
		return "", fmt.Errorf("--path %q must start with /", path)
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
