// Package testenv starts the real servers tests talk to — redis-server and
// nats-server, alone, as a Redis Cluster and a NATS cluster (cluster.go) or
// as a master with replicas and Sentinels (sentinel.go) — on free loopback ports, owned and stopped by the test. It never
// touches a server it did not start (nor ports 6379 and 4222).
//
// A missing binary skips the test, except under LB_REQUIRE_ALL=1 (set by
// .ci/run), where it fails it. Long marks the tests `go test -short`
// leaves out.
//
// It also holds what every test package needs alike: Eventually and Until
// (wait for a state by polling it) and LogBuffer (a server's log the test
// reads while the server writes).
package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireAll reports whether missing infrastructure must fail tests.
func RequireAll() bool { return os.Getenv("LB_REQUIRE_ALL") == "1" }

// Missing skips t, or fails it under LB_REQUIRE_ALL=1, saying what to install.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	msg := fmt.Sprintf("%s not found; install it with: %s", what, install)
	if RequireAll() {
		t.Fatalf("LB_REQUIRE_ALL=1: %s", msg)
	}
	t.Skip(msg)
}

// Long skips t under `go test -short`, so the edit–test loop runs the unit
// tests only; call it first in end-to-end, browser, cluster, fault and
// multi-node tests. LB_REQUIRE_ALL does not turn this skip into a failure,
// as it does a missing server's: -short is the caller's choice, and CI
// never passes it.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("testenv: a long test; skipped under -short")
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Proc is a server process started by a test. Kill, Stop and Start may be
// called in any order to inject faults; the process is always stopped at the
// end of the test.
type Proc struct {
	Name string
	Port int
	Dir  string // working directory, kept across restarts

	t     testing.TB
	bin   string
	args  []string
	ready func(addr string) error // the server's own answer, not just an open port
	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	log   *os.File
}

// Addr is host:port.
func (p *Proc) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// Start (re)starts the process on its port and waits until it answers.
func (p *Proc) Start() {
	p.t.Helper()
	if err := p.start(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.Dir
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := p.ready(p.Addr())
		select {
		case <-done:
			// Exited: most likely another test's server took the port first,
			// and err (if nil) came from that server.
			p.cmd = nil
			return fmt.Errorf("%w: %s exited at start; log:\n%s", errExited, p.Name, p.tail())
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: %s did not answer on %s: %v; log:\n%s", p.Name, p.Addr(), err, p.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() { p.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for the process to exit.
func (p *Proc) Stop() { p.signal(syscall.SIGTERM) }

// Pause and Resume freeze and thaw the process (SIGSTOP/SIGCONT): a server
// that holds its connections open but answers nothing.
func (p *Proc) Pause()  { p.send(syscall.SIGSTOP) }
func (p *Proc) Resume() { p.send(syscall.SIGCONT) }

func (p *Proc) send(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

func (p *Proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT) // a paused process cannot exit
	syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

func (p *Proc) tail() string {
	b, _ := os.ReadFile(p.log.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

var errExited = errors.New("testenv: exited")

func newProc(t testing.TB, name, bin string, args func(port int, dir string) []string, ready func(addr string) error) *Proc {
	t.Helper()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	p := &Proc{Name: name, Dir: dir, t: t, bin: bin, log: log, ready: ready}
	t.Cleanup(func() { p.Kill(); log.Close() })
	// A free port can be taken by a parallel test between FreePort and the
	// server's bind; then the server exits and we try another port.
	for attempt := 0; ; attempt++ {
		p.Port = FreePort(t)
		p.args = args(p.Port, dir)
		err := p.start()
		if err == nil {
			return p
		}
		if !errors.Is(err, errExited) || attempt == 4 {
			t.Fatal(err)
		}
	}
}

func redisReady(addr string) error {
	got, err := RedisCommand(addr, "PING")
	if err == nil && got != "+PONG" {
		err = fmt.Errorf("PING answered %q", got)
	}
	return err
}

func natsReady(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && !strings.HasPrefix(line, "INFO ") {
		err = fmt.Errorf("greeting %q", line)
	}
	return err
}

// Redis is a redis-server started for one test.
type Redis struct{ *Proc }

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// StartRedis starts redis-server on a free port with persistence off, plus
// any extra arguments (e.g. "--appendonly", "yes", "--appendfsync", "always").
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server", "apt-get install -y redis-server")
	}
	p := newProc(t, "redis", bin, func(port int, dir string) []string {
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--protected-mode", "no", "--enable-debug-command", "local"}
		return append(args, extra...)
	}, redisReady)
	return &Redis{p}
}

// NATS is a nats-server started for one test.
type NATS struct{ *Proc }

// URL is the nats:// URL of the server.
func (n *NATS) URL() string { return "nats://" + n.Addr() }

// StartNATS starts nats-server on a free port. The binary is taken from PATH
// or, when absent, built once from the nats-server module this project
// already depends on (so a machine with Go needs nothing else).
func StartNATS(t testing.TB, extra ...string) *NATS {
	t.Helper()
	bin := natsServerBinary(t)
	p := newProc(t, "nats", bin, func(port int, dir string) []string {
		return append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(port)}, extra...)
	}, natsReady)
	return &NATS{p}
}

func natsServerBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	path, err := buildNATSServer()
	if err != nil {
		Missing(t, "nats-server ("+err.Error()+")", "apt-get install -y nats-server")
	}
	return path
}

// buildNATSServer builds the nats-server command from the module cache into
// the user cache dir, once per version; concurrent test binaries race only on
// an atomic rename.
func buildNATSServer() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	ver, err := exec.Command("go", "list", "-C", root, "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2").Output()
	if err != nil {
		return "", fmt.Errorf("go list nats-server: %v", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "wsgateway-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "nats-server-"+strings.TrimSpace(string(ver)))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	build := exec.Command("go", "build", "-C", root, "-o", tmp, "github.com/nats-io/nats-server/v2")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build nats-server: %v: %s", err, b)
	}
	return out, os.Rename(tmp, out)
}

// BuildGateway builds ./cmd/wsgateway into dir and returns the binary's
// path; flags are further `go build` flags (e.g. "-race").
func BuildGateway(dir string, flags ...string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "wsgateway")
	args := append(append([]string{"build", "-C", root, "-o", out}, flags...), "./cmd/wsgateway")
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/wsgateway: %v\n%s", err, b)
	}
	return out, nil
}

// ModuleRoot is the directory of this project's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// Chromium returns the path of a Chromium or Chrome binary.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "chromium", "apt-get install -y chromium")
	return ""
}

// RedisCommand sends one inline command to a Redis server and returns the
// first reply line: enough for test set-up (CONFIG SET, DEBUG SLEEP) without
// a client library.
func RedisCommand(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Eventually polls cond until it returns nil. Once within has passed, it
// fails t, naming what it waited for and cond's last error. Tests wait on
// observable state this way, never on a fixed sleep; the poll starts at
// 5ms and backs off to 50ms, so conditions that cost a round trip are not
// hammered.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Until is Eventually for a condition that has no error to tell.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("still false")
	})
}

// LogBuffer is an io.Writer a server's goroutines write to while the test
// reads it. With Max > 0 it keeps only about the last Max bytes (the
// older half is dropped when it fills); zero keeps everything, for tests
// that search the whole log.
type LogBuffer struct {
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Max > 0 && l.b.Len() > l.Max {
		keep := append([]byte(nil), l.b.Bytes()[l.b.Len()/2:]...)
		l.b.Reset()
		l.b.Write(keep)
	}
	return l.b.Write(p)
}

// String is everything kept.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tail is the last n bytes kept.
func (l *LogBuffer) Tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
