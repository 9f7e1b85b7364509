package main

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/node"
)

// envName is a flag's environment twin: --redis-url ↔ LB_REDIS_URL.
func envName(flagName string) string {
	return "LB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flagSet wraps flag.FlagSet so that every flag takes its default from its
// environment twin when that is set: the command line wins over the
// environment, the environment over the built-in default.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
	errs   []error
	// secrets are flags whose environment value is applied after parsing,
	// never as the flag's default: flag prints defaults in --help and in
	// every mistyped-flag error, and a secret must reach neither.
	secrets []secretFlag
}

type secretFlag struct {
	p         *string
	name, env string
}

func newFlagSet(name string, getenv func(string) string, out io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return &flagSet{FlagSet: fs, getenv: getenv}
}

func (f *flagSet) env(name string) (string, bool) {
	v := f.getenv(envName(name))
	return v, v != ""
}

func (f *flagSet) usage(name, text string) string {
	return fmt.Sprintf("%s (env %s)", text, envName(name))
}

func (f *flagSet) String(p *string, name, def, text string) {
	if v, ok := f.env(name); ok {
		def = v
	}
	f.StringVar(p, name, def, f.usage(name, text))
}

// Secret is a string flag holding a secret (a key, or a URL that may carry
// a password): its environment twin is read after parsing, so --help and
// flag errors never show it.
func (f *flagSet) Secret(p *string, name, text string) {
	f.SecretFrom(p, name, envName(name), text)
}

// SecretFrom is Secret with an environment variable other than the flag's
// twin (token and load read the gateway's own LB_JWT_SECRET).
func (f *flagSet) SecretFrom(p *string, name, env, text string) {
	f.StringVar(p, name, "", fmt.Sprintf("%s (env %s; never printed)", text, env))
	f.secrets = append(f.secrets, secretFlag{p: p, name: name, env: env})
}

func (f *flagSet) Int(p *int, name string, def int, text string) {
	f.IntVar(p, name, envDefault(f, name, def, strconv.Atoi, "an integer"), f.usage(name, text))
}

func (f *flagSet) Bool(p *bool, name string, def bool, text string) {
	f.BoolVar(p, name, envDefault(f, name, def, strconv.ParseBool, "a boolean"), f.usage(name, text))
}

func (f *flagSet) Duration(p *time.Duration, name string, def time.Duration, text string) {
	f.DurationVar(p, name, envDefault(f, name, def, time.ParseDuration, "a duration"), f.usage(name, text))
}

// envDefault is the flag's environment twin read by parse, or def when the
// twin is unset; a twin that does not parse keeps def and fails flagSet.parse.
func envDefault[T any](f *flagSet, name string, def T, parse func(string) (T, error), kind string) T {
	v, ok := f.env(name)
	if !ok {
		return def
	}
	x, err := parse(v)
	if err != nil {
		f.errs = append(f.errs, fmt.Errorf("%s=%q: not %s", envName(name), v, kind))
		return def
	}
	return x
}

// isSet reports whether the flag was given on the command line or through
// its environment twin.
func (f *flagSet) isSet(name string) bool {
	if _, ok := f.env(name); ok {
		return true
	}
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// devAddr is --dev's listen address when none is given.
const devAddr = "127.0.0.1:8080"

// parse parses args and reports the first bad environment value too.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	set := make(map[string]bool)
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, s := range f.secrets {
		if !set[s.name] {
			*s.p = f.getenv(s.env)
		}
	}
	if len(f.errs) > 0 {
		return f.errs[0]
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.Arg(0))
	}
	return nil
}

// serveOptions are the gateway's settings (docs/protocol.md §1).
type serveOptions struct {
	Dev             bool
	DevBoards       int
	MemberScoreRate int
	Addr            string
	RedisURL        string
	RedisLanes      int
	RedisLinger     time.Duration
	RedisReplicas   int
	RedisReplicaTO  time.Duration
	NATSURL         string
	JWTSecret       string
	JWTPublicKey    string
	JWKSURL         string
	JWTIssuer       string
	JWTAudience     string
	Boards          string
	TopInterval     time.Duration
	MaxMessage      int
	PingInterval    time.Duration
	Rate            int
	AllowedOrigins  string
	PublicRead      bool
	WebhookPrivate  bool
	NodeID          string
	DrainTimeout    time.Duration
	MetricsAddr     string
	LogLevel        string

	MaxConnsPerIP     int
	MaxConnsPerMember int
	ListBudget        int
	MaxListIDs        int
	TrustedProxies    []netip.Prefix
	ReadHeaderTimeout time.Duration

	FrameAncestors []string // origins that may frame the pages (CSP frame-ancestors)
	CORSOrigins    []string // origins whose scripts may call /api/v1
	RESTRate       int
	MaxConns       int
}

func parseServe(args []string, getenv func(string) string, out io.Writer) (serveOptions, error) {
	var o serveOptions
	f := newFlagSet("wsgateway", getenv, out)
	f.FlagSet.Usage = func() {
		fmt.Fprint(out, commandsUsage)
		f.PrintDefaults()
	}
	f.Bool(&o.Dev, "dev", false, "embedded default: in-memory engine, in-process NATS, random secret, boards created on first use")
	f.Int(&o.MemberScoreRate, "member-score-rate", 0, "score events per second per player across its connections on this node (burst 2x); 0 = --rate, -1 = no limit")
	f.Int(&o.DevBoards, "dev-boards", node.DefaultDevBoards, "with --dev: the most boards created on first use (a first write past it gets limit_reached)")
	f.String(&o.Addr, "addr", ":8080", "listen address (HTTP, WebSocket, REST, pages); with --dev and no --addr: 127.0.0.1:8080")
	f.Secret(&o.RedisURL, "redis-url", "redis://[:pass@]host:port/db, rediss://…, h1:p1,h2:p2, redis-cluster://h1:p1,h2:p2 or redis-sentinel://h1:p1,h2:p2/<master-name>[/db]; empty = in-memory engine")
	f.Int(&o.RedisLanes, "redis-lanes", node.DefaultRedisLanes, "pipelines in flight to Redis, each one lane of score events; a connection's events to a board keep one lane")
	f.Duration(&o.RedisLinger, "redis-shard-linger", node.DefaultRedisShardLinger, "how long a lane's pipeline holding a sharded board's events waits for more, to fill the board's per-shard calls; 0 = never (unsharded boards' never wait)")
	f.Int(&o.RedisReplicas, "redis-replicas", 0, "acknowledge an event only after its write reached this many replicas (Redis WAIT, once per pipeline)")
	f.Duration(&o.RedisReplicaTO, "redis-replica-timeout", time.Second, "past it, the events of a pipeline whose write did not reach --redis-replicas replicas get unavailable")
	f.Secret(&o.NATSURL, "nats-url", "NATS servers, comma-separated; empty = in-process server")
	f.Secret(&o.JWTSecret, "jwt-secret", "HS256 key (at least 32 bytes)")
	f.String(&o.JWTPublicKey, "jwt-public-key", "", "PEM file with an RS256, ES256 or EdDSA public key")
	f.String(&o.JWKSURL, "jwks-url", "", "JWKS endpoint (keys selected by kid)")
	f.String(&o.JWTIssuer, "jwt-issuer", "", "required iss claim, checked when set")
	f.String(&o.JWTAudience, "jwt-audience", "", "required aud claim, checked when set")
	f.String(&o.Boards, "boards", "", "JSON or YAML file of board configs applied at start")
	f.Duration(&o.TopInterval, "top-interval", 100*time.Millisecond, "minimum gap between two top/view frames of one board on one connection")
	f.Int(&o.MaxMessage, "max-message", 4096, "largest client frame in bytes")
	f.Duration(&o.PingInterval, "ping-interval", 25*time.Second, "how often each connection is pinged (its pong proves the client alive; the traffic keeps proxies from closing an idle connection): below the proxies' idle timeout")
	f.Int(&o.Rate, "rate", 50, "messages per second per player or spectator connection (burst 2x)")
	f.String(&o.AllowedOrigins, "allowed-origins", "", "comma-separated origin host patterns for browser upgrades; empty = same host")
	f.Bool(&o.PublicRead, "public-read", false, "allow token-less spectators on boards marked public")
	f.Bool(&o.WebhookPrivate, "webhook-allow-private", false, "let webhook URLs reach addresses that are not public unicast (loopback, private, link-local, other special-purpose blocks)")
	f.String(&o.NodeID, "node-id", "", "this node's name in frames, logs and metrics; empty = hostname-pid")
	f.Duration(&o.DrainTimeout, "drain-timeout", node.DefaultDrainTimeout, "how long SIGTERM waits for connections to drain")
	f.String(&o.MetricsAddr, "metrics-addr", "", "serve /metrics and /debug/pprof on this separate address instead of --addr")
	f.String(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.Int(&o.MaxConnsPerIP, "max-conns-per-ip", node.DefaultMaxConnsPerIP, "open WebSocket connections per client address (IPv6: per /64; loopback not counted); 0 = no cap")
	f.Int(&o.MaxConnsPerMember, "max-conns-per-member", node.DefaultMaxConnsPerMember, "open WebSocket connections per player or spectator member (server and admin exempt); 0 = no cap")
	f.Int(&o.ListBudget, "list-budget", node.DefaultListBudget, "ids the members subscriptions of this node read per --top-interval, on average over every board; beyond it members frames slow down; 0 = no bound")
	f.Int(&o.MaxListIDs, "max-list-ids", node.DefaultMaxListIDs, "distinct ids one player's or spectator's members subscriptions may list on one board of this node (server and admin exempt); 0 = no bound")
	var proxies string
	f.String(&proxies, "trusted-proxies", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For gives the client address; empty = the TCP peer")
	f.Duration(&o.ReadHeaderTimeout, "read-header-timeout", node.DefaultReadHeaderTimeout, "time a client gets to send its request headers, the token included (slowloris)")
	var frameAncestors, corsOrigins string
	f.String(&frameAncestors, "frame-ancestors", "", "comma-separated origins that may frame the pages, e.g. the overlay (CSP frame-ancestors); empty = this origin only")
	f.String(&corsOrigins, "cors-origins", "", "comma-separated origins (or *) whose scripts may call the REST API; empty = none")
	f.Int(&o.MaxConns, "max-conns", 0, "open WebSocket connections on this node; past it upgrades get 503 so a load balancer tries another node; 0 = no cap")
	f.Int(&o.RESTRate, "rest-rate", node.DefaultRESTRate, "REST requests per second per player or spectator member, and per client address without a valid token (burst 2x; server and admin exempt); 0 = no limit")
	if err := f.parse(args); err != nil {
		return o, err
	}
	if o.Dev && !f.isSet("addr") {
		// --dev mints admin tokens for anyone who asks: loopback only,
		// unless the operator names an address.
		o.Addr = devAddr
	}
	o.FrameAncestors, o.CORSOrigins = splitList(frameAncestors), splitList(corsOrigins)
	tp, err := node.ParseTrustedProxies(proxies)
	if err != nil {
		return o, fmt.Errorf("--trusted-proxies: %w", err)
	}
	o.TrustedProxies = tp
	if o.DevBoards < 1 {
		return o, fmt.Errorf("--dev-boards must be at least 1")
	}
	if o.RedisLanes < 1 {
		return o, fmt.Errorf("--redis-lanes must be at least 1")
	}
	if o.RedisLinger < 0 {
		return o, fmt.Errorf("--redis-shard-linger must not be negative")
	}
	if o.RedisReplicas < 0 || o.RedisReplicaTO <= 0 {
		return o, fmt.Errorf("--redis-replicas must not be negative and --redis-replica-timeout must be positive")
	}
	if o.RESTRate < 0 || o.MaxConns < 0 {
		return o, fmt.Errorf("--rest-rate and --max-conns must not be negative")
	}
	if o.MaxConnsPerIP < 0 || o.MaxConnsPerMember < 0 {
		return o, fmt.Errorf("--max-conns-per-ip and --max-conns-per-member must not be negative")
	}
	if o.ListBudget < 0 || o.MaxListIDs < 0 {
		return o, fmt.Errorf("--list-budget and --max-list-ids must not be negative")
	}
	if o.ReadHeaderTimeout <= 0 {
		return o, fmt.Errorf("--read-header-timeout must be positive")
	}
	if o.NodeID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "node"
		}
		o.NodeID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.TopInterval <= 0 {
		return o, fmt.Errorf("--top-interval must be positive")
	}
	if o.PingInterval < time.Second {
		return o, fmt.Errorf("--ping-interval must be at least 1s")
	}
	if o.MaxMessage < 256 {
		return o, fmt.Errorf("--max-message must be at least 256 bytes")
	}
	if o.Rate < 1 {
		return o, fmt.Errorf("--rate must be at least 1")
	}
	keys := 0
	for _, k := range []string{o.JWTSecret, o.JWTPublicKey, o.JWKSURL} {
		if k != "" {
			keys++
		}
	}
	if keys > 1 {
		return o, fmt.Errorf("set only one of --jwt-secret, --jwt-public-key, --jwks-url")
	}
	if keys == 0 && !o.Dev {
		return o, errNoKey
	}
	if o.JWTSecret == exampleSecret {
		return o, errExampleKey
	}
	return o, nil
}

// errNoKey makes the process exit with status 2: it never runs
// unauthenticated by accident (docs/protocol.md §1).
var errNoKey = usageError("no JWT key configured: set --jwt-secret (LB_JWT_SECRET), --jwt-public-key (LB_JWT_PUBLIC_KEY) or --jwks-url (LB_JWKS_URL), or run with --dev")

// exampleSecret is the HS256 key in deploy/gateway.env.example. It is
// public, so anyone could mint admin tokens for a gateway that runs with it:
// the reference deployment must not start before its key is set.
const exampleSecret = "example-only-change-me-0123456789abcdef0123456789"

var errExampleKey = usageError("LB_JWT_SECRET is the public example key of deploy/gateway.env.example: copy it to deploy/gateway.env, set LB_JWT_SECRET there to your own key (openssl rand -hex 32) and start again")

// usageError is a configuration mistake: exit status 2 with a one-line message.
type usageError string

func (e usageError) Error() string { return string(e) }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// connCap maps a cap flag (0 = no cap) to the node's config (negative = no cap,
// 0 = the default).
func connCap(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
