package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/proto"
)

// secret signs every HS256 token of the suite (32+ bytes).
const secret = "e2e-reliability-secret-0123456789abcdef"

// gwOpts start one gateway process.
type gwOpts struct {
	Node     string
	RedisURL string
	NATSURL  string
	// Args are extra flags, e.g. "--drain-timeout", "5s".
	Args []string
	// Auth replaces "--jwt-secret <secret>" (e.g. "--jwks-url", u).
	Auth []string
}

// gateway is a wsgateway process owned by one test.
type gateway struct {
	t    testing.TB
	opts gwOpts
	Addr string // 127.0.0.1:port
	Log  string // stderr and stdout of every run, appended

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error // exit status of the last run, valid once done is closed
}

// startGateway starts a gateway and waits until /healthz answers.
func startGateway(t testing.TB, o gwOpts) *gateway {
	t.Helper()
	testenv.Long(t) // a backstop: under -short TestMain builds no gateway
	if o.Node == "" {
		o.Node = "n1"
	}
	g := &gateway{t: t, opts: o, Log: filepath.Join(t.TempDir(), o.Node+".log")}
	t.Cleanup(g.Kill)
	for attempt := 0; ; attempt++ {
		g.Addr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		err := g.start()
		if err == nil {
			return g
		}
		// Another test may have taken the port between FreePort and bind.
		if attempt == 4 || !strings.Contains(g.logTail(), "address already in use") {
			t.Fatalf("e2e: gateway %s: %v\n%s", o.Node, err, g.logTail())
		}
	}
}

func (g *gateway) args() []string {
	a := []string{"--addr", g.Addr, "--node-id", g.opts.Node, "--log-level", "debug"}
	if g.opts.RedisURL != "" {
		a = append(a, "--redis-url", g.opts.RedisURL)
	}
	if g.opts.NATSURL != "" {
		a = append(a, "--nats-url", g.opts.NATSURL)
	}
	if g.opts.Auth != nil {
		a = append(a, g.opts.Auth...)
	} else {
		a = append(a, "--jwt-secret", secret)
	}
	return append(a, g.opts.Args...)
}

// start runs the process (again) on g.Addr and waits for /healthz.
func (g *gateway) start() error {
	f, err := os.OpenFile(g.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(gatewayBin, g.args()...)
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	g.mu.Lock()
	g.cmd, g.done = cmd, done
	g.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		g.mu.Lock()
		g.err = err
		g.mu.Unlock()
		close(done)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-done:
			return fmt.Errorf("exited at start: %v", g.exitErr())
		default:
		}
		resp, err := httpClient.Get(g.HTTP() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			g.Kill()
			return fmt.Errorf("no /healthz within 20s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanEnv is the test's environment without LB_* variables, so that a
// developer's shell cannot change the gateway under test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LB_") {
			env = append(env, kv)
		}
	}
	return env
}

// URL is the WebSocket endpoint.
func (g *gateway) URL() string { return "ws://" + g.Addr + "/ws" }

// HTTP is the base URL for REST.
func (g *gateway) HTTP() string { return "http://" + g.Addr }

// Kill sends SIGKILL and waits for the exit. Safe when not running.
func (g *gateway) Kill() { g.signal(syscall.SIGKILL, 10*time.Second) }

// Term sends SIGTERM and waits up to timeout; it returns how long the exit
// took and the exit error (nil: status 0). Past timeout the process is
// killed and Term reports the timeout.
func (g *gateway) Term(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if !g.signal(syscall.SIGTERM, timeout) {
		return time.Since(start), fmt.Errorf("no exit within %s after SIGTERM", timeout)
	}
	return time.Since(start), g.exitErr()
}

func (g *gateway) exitErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// signal sends sig and waits up to timeout for the exit (then SIGKILLs).
// It reports whether the process exited by itself in time.
func (g *gateway) signal(sig syscall.Signal, timeout time.Duration) bool {
	g.mu.Lock()
	cmd, done := g.cmd, g.done
	g.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return false
	}
}

// Pid is the running process's id (0 when stopped).
func (g *gateway) Pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// Logs is everything the gateway wrote so far.
func (g *gateway) Logs() string {
	b, _ := os.ReadFile(g.Log)
	return string(b)
}

func (g *gateway) logTail() string {
	s := g.Logs()
	if len(s) > 3000 {
		s = s[len(s)-3000:]
	}
	return s
}

// httpClient is shared by the REST helpers; its timeout keeps a wedged
// gateway from hanging a test.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// token mints an HS256 token with the suite's secret.
func token(t testing.TB, c auth.Claims) string {
	t.Helper()
	if c.TTL == 0 {
		c.TTL = time.Hour
	}
	tok, err := auth.MintHS256([]byte(secret), c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func adminToken(t testing.TB) string {
	return token(t, auth.Claims{Sub: "admin", Role: auth.Admin})
}

// rest does one JSON request; out (if non-nil) receives a 2xx body. It
// returns the status and the raw body.
func rest(ctx context.Context, method, url, tok string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("decode %s: %w", b, err)
		}
	}
	return resp.StatusCode, b, nil
}

// putBoard creates board id with the given config fields.
func putBoard(t testing.TB, g *gateway, id string, cfg map[string]any) {
	t.Helper()
	if cfg == nil {
		cfg = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, b, err := rest(ctx, "PUT", g.HTTP()+"/api/v1/boards/"+id, adminToken(t), cfg, nil)
	if err != nil || st != 200 {
		t.Fatalf("e2e: put board %s: %d %s %v", id, st, b, err)
	}
}

// topPage is the body of GET …/top.
type topPage struct {
	Board   string        `json:"board"`
	Offset  int           `json:"offset"`
	Entries []proto.Entry `json:"entries"`
	Total   int64         `json:"total"`
}

// memberBody is the body of GET …/members/{m}.
type memberBody struct {
	Member string        `json:"member"`
	Rank   *int64        `json:"rank"`
	Score  *int64        `json:"score"`
	Around []proto.Entry `json:"around"`
}

// readBoard reads every entry of a board through REST, 100 at a time.
func readBoard(ctx context.Context, g *gateway, tok, board string) ([]proto.Entry, int64, error) {
	var all []proto.Entry
	var total int64
	for off := 0; ; off += 100 {
		var p topPage
		u := fmt.Sprintf("%s/api/v1/boards/%s/top?offset=%d&limit=100", g.HTTP(), board, off)
		st, b, err := rest(ctx, "GET", u, tok, nil, &p)
		if err != nil || st != 200 {
			return nil, 0, fmt.Errorf("GET %s: %d %s %v", u, st, b, err)
		}
		all = append(all, p.Entries...)
		total = p.Total
		if len(p.Entries) < 100 {
			return all, total, nil
		}
	}
}

// tcpProxy relays TCP to a target and can partition: while partitioned,
// bytes in both directions are dropped and new connections are accepted
// but black-holed, as a network partition looks to both ends. Heal cuts the
// black-holed connections (their streams lost bytes) and relays again.
type tcpProxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex // guards conns and down
	conns map[net.Conn]struct{}
	down  bool
}

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.cutAll() })
	return p
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		down := p.down
		p.mu.Unlock()
		if down {
			go p.sink(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			p.drop(c)
			continue
		}
		p.mu.Lock()
		p.conns[s] = struct{}{}
		p.mu.Unlock()
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

// pipe copies src to dst, dropping bytes while partitioned.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isDown() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	p.drop(src)
	p.drop(dst)
}

// sink reads and discards from a black-holed connection until it is cut.
func (p *tcpProxy) sink(c net.Conn) {
	io.Copy(io.Discard, c)
	p.drop(c)
}

func (p *tcpProxy) isDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

func (p *tcpProxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Partition starts dropping everything.
func (p *tcpProxy) Partition() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
}

// Heal cuts every connection (their streams lost bytes) and relays again.
func (p *tcpProxy) Heal() {
	p.cutAll()
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *tcpProxy) cutAll() {
	p.mu.Lock()
	cs := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		p.drop(c)
	}
}

// env is a test's Redis and NATS.
type env struct {
	Redis    *testenv.Redis
	RCluster *testenv.RedisCluster // instead of Redis (clusterOpts.RedisCluster)
	NATS     *testenv.NATS
	NCluster *testenv.NATSCluster // instead of NATS (clusterOpts.NATSCluster)
}

func startEnv(t testing.TB, redisArgs ...string) env {
	t.Helper()
	return env{Redis: testenv.StartRedis(t, redisArgs...), NATS: testenv.StartNATS(t)}
}

// redisDigest is DEBUG DIGEST: one hash of the whole dataset, so "nothing
// changed" is one comparison.
func redisDigest(t testing.TB, r *testenv.Redis) string {
	t.Helper()
	d, err := testenv.RedisCommand(r.Addr(), "DEBUG", "DIGEST")
	if err != nil {
		t.Fatalf("e2e: DEBUG DIGEST: %v", err)
	}
	return d
}

var errNotYet = errors.New("not yet")
