// Command wsgateway is the realtime leaderboard gateway.
//
//	wsgateway [serve] [flags]     run the gateway (see --help)
//	wsgateway --dev               run it with nothing installed
//	wsgateway token [flags]       print a signed HS256 token (or a --dev gateway's)
//	wsgateway load [flags]        run the load generator against a gateway
//	wsgateway version             print the build information
//	wsgateway healthcheck         probe a local gateway's /healthz (container HEALTHCHECK)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "wsgateway:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "wsgateway:", err)
		return 1
	}
}

// run is the whole program: main only supplies the process's arguments,
// environment and streams, so tests can run it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		args = nil
		cmd = "version"
	}
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		o, err := parseServe(args, getenv, stderr)
		if err != nil {
			return flagError(err)
		}
		return serve(ctx, o, stdout, stderr)
	case "token":
		return tokenCmd(ctx, args, getenv, stdout, stderr)
	case "load":
		return loadCmd(ctx, args, getenv, stdout, stderr)
	case "version":
		return versionCmd(args, stdout, stderr)
	case "healthcheck":
		return healthcheckCmd(ctx, args, getenv, stdout, stderr)
	default:
		return usageError(fmt.Sprintf("unknown command %q (want serve, token, load, version or healthcheck; see --help)", cmd))
	}
}

// flagError turns a flag parsing failure into a usage error (exit 2).
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) || errors.As(err, new(usageError)) {
		return err
	}
	return usageError(err.Error())
}

// commandsUsage heads `wsgateway --help`; the serve flags follow it.
const commandsUsage = `Usage:
  wsgateway [serve] [flags]     run the gateway (flags below)
  wsgateway --dev               run it with nothing installed (loopback only)
  wsgateway token [flags]       print a signed HS256 token (token --help)
  wsgateway load [flags]        run the load generator against a gateway (load --help)
  wsgateway version             print the version and build information (also --version)
  wsgateway healthcheck [flags] GET /healthz of a local gateway; exit 0 when it answers 200

Every flag also reads its environment twin (--redis-url: LB_REDIS_URL); the
command line wins. Secrets from the environment are never printed.

Serve flags:
`
