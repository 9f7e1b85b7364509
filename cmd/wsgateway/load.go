package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/loadgen"
)

// loadCmd runs the load generator against a gateway and prints a summary,
// and writes the JSON and HTML reports when asked.
func loadCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		cfg                             loadgen.Config
		secret, token, jsonOut, htmlOut string
		cpuProfile                      string
		quiet, devToken                 bool
		players, spectators, watchs     int
	)
	f := newFlagSet("wsgateway load", getenv, stderr)
	f.String(&cfg.URL, "url", "ws://127.0.0.1:8080/ws", "gateway WebSocket URL")
	// The secret's twin is the gateway's own LB_JWT_SECRET, as for `token`.
	f.SecretFrom(&secret, "secret", "LB_JWT_SECRET", "the gateway's HS256 key; every token is minted from it")
	f.Secret(&token, "token", "one token for every connection instead of --secret (role server or admin, e.g. the --dev banner's admin token)")
	f.Bool(&devToken, "dev-token", false, "get each connection's token from the --dev gateway's POST /api/v1/dev/token instead of --secret")
	f.String(&cfg.Board, "board", "load", "board under load")
	f.Int(&players, "players", 200, "connections sending score events (role server)")
	f.Int(&spectators, "spectators", 1000, "connections subscribed to the board's top")
	f.Int(&watchs, "watchers", 200, "connections subscribed to their own member's view")
	f.Int(&cfg.Top, "top", 0, "spectators' top-N; 0 = the board's default")
	f.Int(&cfg.Around, "around", 5, "watchers' neighbours above and below")
	f.Int(&cfg.Members, "members", 100000, "distinct members the events spread over")
	f.Int(&cfg.Rate, "rate", 0, "total score events per second; 0 = as fast as acks come back")
	f.Int(&cfg.Inflight, "inflight", 8, "outstanding events per player connection")
	f.Duration(&cfg.Duration, "duration", 30*time.Second, "how long players send")
	f.Duration(&cfg.Churn, "churn", 0, "mean connection lifetime (±50% jitter): each player, spectator and watcher connection then closes and redials; 0 = no churn")
	f.String(&jsonOut, "json", "", "write the JSON report to this file")
	f.String(&htmlOut, "html", "", "write the HTML report (inline SVG charts) to this file")
	f.Bool(&cfg.Create, "create", false, "create the board first (admin token minted from --secret)")
	f.Bool(&quiet, "quiet", false, "no progress line")
	f.String(&cpuProfile, "cpuprofile", "", "write the load generator's own CPU profile (pprof) over the whole run to this file")
	if err := f.parse(args); err != nil {
		return flagError(err)
	}
	switch {
	case token != "" && devToken:
		return usageError("load: set only one of --token and --dev-token")
	case token != "":
		cfg.Tokens = func(context.Context, string, auth.Role) (string, error) { return token, nil }
	case devToken:
		cfg.Tokens = loadgen.DevTokens(cfg.URL, cfg.Duration+10*time.Minute)
	case secret == "":
		return usageError("load: --secret (or LB_JWT_SECRET), --token or --dev-token is required")
	default:
		cfg.Secret = []byte(secret)
	}
	cfg.Players, cfg.Spectators, cfg.Watchers = players, spectators, watchs
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if !quiet {
		cfg.Progress = stderr
		cfg.ProgressTTY = isTerminal(stderr)
	}
	g, err := loadgen.New(cfg)
	if err != nil {
		return usageError(err.Error())
	}
	if cpuProfile != "" {
		pf, err := os.Create(cpuProfile)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return fmt.Errorf("load: cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			pf.Close()
		}()
	}
	rep, err := g.Run(ctx)
	if cfg.ProgressTTY {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, rep.Summary()); err != nil {
		return err
	}
	if jsonOut != "" {
		if err := writeFile(jsonOut, rep.WriteJSON); err != nil {
			return err
		}
	}
	if htmlOut != "" {
		if err := writeFile(htmlOut, rep.WriteHTML); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("load: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal): only
// there is the progress line redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
