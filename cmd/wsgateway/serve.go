package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/node"

	_ "time/tzdata" // board time zones must resolve on machines without zoneinfo
)

// serve runs the gateway until ctx is cancelled (SIGTERM), then drains.
func serve(ctx context.Context, o serveOptions, stdout, stderr io.Writer) error {
	log := newLogger(stderr, o.LogLevel).With("node", o.NodeID)

	verifier, devSecret, err := newVerifier(ctx, o, log)
	if err != nil {
		return err
	}

	boards, err := node.ReadBoards(o.Boards)
	if err != nil {
		return usageError("--boards: " + err.Error())
	}
	var redis redis.UniversalClient // nil: the memory engine
	if o.RedisURL != "" {
		useRedisLog(log)
		if redis, err = node.RedisClient(o.RedisURL); err != nil {
			return usageError("--redis-url: " + err.Error())
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	n, err := node.New(ctx, node.Config{
		ID:                  o.NodeID,
		Dev:                 o.Dev,
		DevBoards:           o.DevBoards,
		Redis:               redis,
		RedisLanes:          o.RedisLanes,
		RedisShardLinger:    shardLinger(o.RedisLinger),
		Boards:              boards,
		NATSURL:             o.NATSURL,
		Verifier:            verifier,
		DevSecret:           devSecret,
		Interval:            o.TopInterval,
		ListBudget:          connCap(o.ListBudget),
		MaxListIDs:          connCap(o.MaxListIDs),
		RedisReplicas:       o.RedisReplicas,
		RedisReplicaTimeout: o.RedisReplicaTO,
		Hub: node.HubConfig{
			MaxMessage:        o.MaxMessage,
			PingInterval:      o.PingInterval,
			Rate:              o.Rate,
			MemberScoreRate:   o.MemberScoreRate,
			AllowedOrigins:    splitList(o.AllowedOrigins),
			PublicRead:        o.PublicRead,
			MaxConnsPerIP:     connCap(o.MaxConnsPerIP),
			MaxConnsPerMember: connCap(o.MaxConnsPerMember),
			MaxConns:          o.MaxConns,
		},
		API:               node.APIConfig{CORSOrigins: o.CORSOrigins, Rate: connCap(o.RESTRate)},
		TrustedProxies:    o.TrustedProxies,
		Web:               node.WebConfig{FrameAncestors: o.FrameAncestors},
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		DrainTimeout:      o.DrainTimeout,
		// --dev mints admin tokens for anyone on the machine: a webhook to
		// a receiver on it gives them nothing more.
		Webhooks:         node.WebhooksConfig{AllowPrivate: o.WebhookPrivate, AllowLoopback: o.Dev},
		Registry:         reg,
		MetricsElsewhere: o.MetricsAddr != "",
		Logger:           log,
	})
	if err != nil {
		return err
	}
	defer n.Close()
	if len(boards) > 0 {
		log.Info("boards applied", "file", o.Boards, "count", len(boards))
	}

	// The metrics listener is bound before the main one, so whoever waits
	// for /healthz can scrape at once, and a taken port fails the start.
	var msrv *http.Server
	var mln net.Listener
	if o.MetricsAddr != "" {
		if msrv, err = metricsServer(o.MetricsAddr, reg); err != nil {
			return err
		}
		if mln, err = net.Listen("tcp", o.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer mln.Close()
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.Addr, err)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return n.Serve(gctx, ln) })
	if msrv != nil {
		g.Go(func() error {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			return msrv.Close()
		})
	}
	announce(stdout, o, ln.Addr(), devSecret, log)
	return g.Wait()
}

// shardLinger is --redis-shard-linger as node.Config.RedisShardLinger,
// whose zero is the default: the flag's 0 (never) is negative there.
func shardLinger(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func metricsServer(addr string, reg *prometheus.Registry) (*http.Server, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageError("--metrics-addr: " + err.Error())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", redactedCmdline(os.Args))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}, nil
}

// redactedCmdline is pprof.Cmdline with the values of secret flags (a key,
// a URL that may carry a password: names ending in -secret, -key or -url)
// replaced, so that whoever reaches --metrics-addr does not read the JWT
// key given as a flag.
func redactedCmdline(args []string) http.HandlerFunc {
	out := make([]string, len(args))
	redactNext := false
	for i, a := range args {
		switch {
		case redactNext:
			a, redactNext = "xxxxx", false
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if isSecretFlag(name) {
				if hasValue {
					a = a[:strings.IndexByte(a, '=')+1] + "xxxxx"
				} else {
					redactNext = true
				}
			}
		}
		out[i] = a
	}
	body := strings.Join(out, "\x00")
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, body)
	}
}

func isSecretFlag(name string) bool {
	return strings.HasSuffix(name, "-secret") || strings.HasSuffix(name, "-key") || strings.HasSuffix(name, "-url")
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// newVerifier builds the JWT verifier. In --dev without a key it makes a
// random HS256 secret and returns it, so the process can mint dev tokens.
func newVerifier(ctx context.Context, o serveOptions, log *slog.Logger) (*auth.Verifier, []byte, error) {
	cfg := auth.Config{Issuer: o.JWTIssuer, Audience: o.JWTAudience, JWKSURL: o.JWKSURL, Logger: log}
	var devSecret []byte
	switch {
	case o.JWTSecret != "":
		// Never devSecret: a dev token signed with a configured key would
		// be valid on every production node that shares it.
		cfg.Secret = []byte(o.JWTSecret)
	case o.JWTPublicKey != "":
		pem, err := os.ReadFile(o.JWTPublicKey)
		if err != nil {
			return nil, nil, usageError("--jwt-public-key: " + err.Error())
		}
		cfg.PublicKeyPEM = pem
	case o.JWKSURL != "":
	default: // --dev without a key (parseServe refuses anything else): a random key only this process trusts
		s, err := auth.RandomSecret()
		if err != nil {
			return nil, nil, err
		}
		cfg.Secret, devSecret = s, s
	}
	v, err := auth.New(ctx, cfg)
	if err != nil {
		return nil, nil, usageError(err.Error())
	}
	if o.Dev && devSecret == nil {
		log.Info("dev token endpoint off: a JWT key is configured; mint tokens with `wsgateway token`")
	}
	return v, devSecret, nil
}

// announce prints where the gateway listens and, in --dev, a ready admin token.
func announce(w io.Writer, o serveOptions, addr net.Addr, devSecret []byte, log *slog.Logger) {
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && (tcp.IP.IsUnspecified() || tcp.IP == nil) {
		host = fmt.Sprintf("localhost:%d", tcp.Port)
	}
	engine, natsURL := "memory", "in-process"
	if o.RedisURL != "" {
		engine = "redis"
	}
	if o.NATSURL != "" {
		natsURL = redactURLs(o.NATSURL)
	}
	log.Info("listening", "addr", addr.String(), "engine", engine, "nats", natsURL, "dev", o.Dev)
	var b strings.Builder
	fmt.Fprintf(&b, "wsgateway %s listening on %s (engine %s, nats %s)\n", o.NodeID, addr, engine, natsURL)
	fmt.Fprintf(&b, "  spectator page  http://%s/\n", host)
	fmt.Fprintf(&b, "  player page     http://%s/play\n", host)
	fmt.Fprintf(&b, "  stream overlay  http://%s/overlay?board=demo\n", host)
	fmt.Fprintf(&b, "  websocket       ws://%s/ws   (subprotocol lb.v1)\n", host)
	fmt.Fprintf(&b, "  REST            http://%s/api/v1/boards\n", host)
	fmt.Fprintf(&b, "  console         http://%s/admin\n", host)
	if devSecret != nil {
		tok, err := auth.MintHS256(devSecret, auth.Claims{Sub: "admin", Role: auth.Admin, Name: "Admin", TTL: 24 * time.Hour})
		if err == nil {
			fmt.Fprintf(&b, "  admin token (24h):\n%s\n", tok)
			fmt.Fprintf(&b, "  try: curl -H 'Authorization: Bearer %s' http://%s/api/v1/boards\n", tok, host)
			// The key is random and never printed: more tokens come from
			// the dev endpoint, which answers JSON ({"token":…}).
			fmt.Fprintf(&b, "  more tokens: wsgateway token --dev-url http://%s --sub alice --role player\n", host)
			fmt.Fprintf(&b, "           or: curl -X POST http://%s/api/v1/dev/token -d '{\"sub\":\"alice\",\"role\":\"player\"}'   (answers {\"token\":\"…\"})\n", host)
		}
	}
	if devSecret != nil && !isLoopback(addr) {
		fmt.Fprintf(&b, "  WARNING: --dev listens beyond loopback (%s): dev tokens are minted for clients on this machine only, but a reverse proxy on it makes every client one\n", addr)
		log.Warn("dev node listens beyond loopback: dev tokens are minted for loopback clients only, and a proxy on this host makes every client a loopback client", "addr", addr.String())
	}
	io.WriteString(w, b.String())
}

// isLoopback reports whether a listener accepts loopback connections only.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP != nil && tcp.IP.IsLoopback()
}
