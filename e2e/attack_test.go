package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// The attackers of TestHostileSoak run as a process of their own (the
// program in e2e/attacker), not as goroutines of the test: in the test
// process they shared the Go scheduler and the two cores with the load
// generator whose ack latency the soak compares, so part of the measured
// gap was the test's own work. As their own process, at the lowest CPU
// priority (nice 19, when nice(1) is there), they get what the normal
// clients and the gateway leave, as attackers on other machines would, and
// their CPU is measured apart (rusage of the child).

// Where the attackers come from: the attacker dials from attackSource and
// forwards attackClient, and the gateway trusts attackSource as a proxy,
// so attack connections are counted against --max-conns-per-ip under
// attackClient, as a remote client's are (loopback itself is not counted).
const (
	attackSource = "127.0.0.2"
	attackClient = "198.51.100.7" // TEST-NET-2
)

// attackReport is what the attacker program did (its JSON on exit).
type attackReport struct {
	FloodDials    int64 `json:"flood_dials"`
	FloodRefused  int64 `json:"flood_refused"`
	FloodCloses   int64 `json:"flood_closes"`
	FloodOther    int64 `json:"flood_other"`
	FloodFrames   int64 `json:"flood_frames"`
	CloseMillis   int64 `json:"close_ms_max"`
	Scores        int64 `json:"scores"`
	Acked         int64 `json:"acked"`
	Limited       int64 `json:"limit_reached"`
	RateLimited   int64 `json:"rate_limited"`
	OtherReplies  int64 `json:"other_replies"`
	CreatorDials  int64 `json:"creator_dials"`
	DialFailures  int64 `json:"dial_failures"`
	ElapsedMillis int64 `json:"elapsed_ms"`

	CPU   float64 // CPU seconds the process used (user + system)
	Niced bool    // it ran under nice -n 19
}

// add sums o's counts into r (the slowest close: the larger).
func (r *attackReport) add(o attackReport) {
	r.FloodDials += o.FloodDials
	r.FloodRefused += o.FloodRefused
	r.FloodCloses += o.FloodCloses
	r.FloodOther += o.FloodOther
	r.FloodFrames += o.FloodFrames
	r.CloseMillis = max(r.CloseMillis, o.CloseMillis)
	r.Scores += o.Scores
	r.Acked += o.Acked
	r.Limited += o.Limited
	r.RateLimited += o.RateLimited
	r.OtherReplies += o.OtherReplies
	r.CreatorDials += o.CreatorDials
	r.DialFailures += o.DialFailures
	r.ElapsedMillis += o.ElapsedMillis
	r.CPU += o.CPU
	r.Niced = o.Niced
}

// cores is the attacker's CPU per second of its run.
func (r attackReport) cores() float64 {
	if r.ElapsedMillis == 0 {
		return 0
	}
	return r.CPU / (float64(r.ElapsedMillis) / 1000)
}

// attackProc is a running attacker program.
type attackProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
	stderr bytes.Buffer
	niced  bool
}

// buildAttacker builds ./e2e/attacker into dir.
func buildAttacker(t testing.TB, dir string) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "attacker")
	if b, err := exec.Command("go", "build", "-C", root, "-o", out, "./e2e/attacker").CombinedOutput(); err != nil {
		t.Fatalf("go build ./e2e/attacker: %v\n%s", err, b)
	}
	return out
}

// startAttackProcess starts the attacker program against g: two ping
// flooders and one board-naming player. LB_SOAK_ATTACK_NICE=0 runs it at
// normal priority (to see what it costs when it competes for the cores);
// LB_SOAK_ATTACKERS=flood or =create runs only those (to see which costs
// what).
func startAttackProcess(t *testing.T, g *gateway, bin string) *attackProc {
	t.Helper()
	var flood []string
	var create string
	which := os.Getenv("LB_SOAK_ATTACKERS")
	if which != "create" {
		flood = []string{token(t, auth.Claims{Sub: "flooder0"}), token(t, auth.Claims{Sub: "flooder1"})}
	}
	if which != "flood" {
		create = token(t, auth.Claims{Sub: "creator"})
	}
	args := []string{bin, "-addr", g.Addr, "-source", attackSource, "-forwarded-for", attackClient}
	p := &attackProc{}
	if nice, err := exec.LookPath("nice"); err == nil && os.Getenv("LB_SOAK_ATTACK_NICE") != "0" {
		args = append([]string{nice, "-n", "19"}, args...)
		p.niced = true
	}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Env = append(os.Environ(), "ATTACK_FLOOD_TOKENS="+strings.Join(flood, ","), "ATTACK_CREATE_TOKEN="+create)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start the attacker: %v", err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// stop ends the attack (stdin closed), waits for the report and reads the
// process's CPU.
func (p *attackProc) stop(t *testing.T) attackReport {
	t.Helper()
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		t.Fatalf("the attacker did not stop within 30 s; stderr:\n%s", p.stderr.String())
	}
	if err != nil {
		t.Fatalf("the attacker: %v; stderr:\n%s", err, p.stderr.String())
	}
	var r attackReport
	if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
		t.Fatalf("the attacker's report %q: %v", p.stdout.String(), err)
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	r.Niced = p.niced
	return r
}

func (r attackReport) String() string {
	return fmt.Sprintf("%d flood connections (%d closed with 1008, slowest %d ms from dial; %d ended otherwise; %d upgrades refused), %d empty pings sent; %d board-naming scores (%d acked, %d limit_reached, %d rate_limited, %d other); attacker CPU %.2f cores (nice 19: %v)",
		r.FloodDials, r.FloodCloses, r.CloseMillis, r.FloodOther, r.FloodRefused, r.FloodFrames,
		r.Scores, r.Acked, r.Limited, r.RateLimited, r.OtherReplies, r.cores(), r.Niced)
}

// TestFloodRedialMeetsCaps: a flooder closed with 1008 that dials again at
// once keeps meeting its member's cap: a flood close holds the member's
// (and the address's) slot for a while after the connection ended
// (hub.floodHold), so with --max-conns-per-member 2 its third connection
// in a row is refused with 429 rate_limited while another player
// connects, and it may connect again once the hold is over.
func TestFloodRedialMeetsCaps(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	g := startGateway(t, gwOpts{Args: []string{"--max-conns-per-member", "2"}})
	mallory := token(t, auth.Claims{Sub: "mallory"})
	for i := range 2 {
		start := time.Now()
		code, err := floodOnce(g, mallory)
		if err != nil || code != 1008 {
			t.Fatalf("flood connection %d: close %d, %v; want 1008", i, code, err)
		}
		t.Logf("flood connection %d closed with 1008 %s after the dial", i, time.Since(start).Round(time.Millisecond))
	}
	// Both connections are over (their close handshakes too): only the
	// hold can refuse the next dial.
	testenv.Eventually(t, 30*time.Second, "the flood connections ended", func() error {
		m, err := scrape(context.Background(), g.HTTP()+"/metrics")
		if err != nil {
			return err
		}
		if n := m["wsgateway_connections"]; n != 0 {
			return fmt.Errorf("wsgateway_connections %v", n)
		}
		return nil
	})
	ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(mallory))
	if ws != nil {
		ws.Close()
	}
	if err != nil || resp == nil || resp.StatusCode != 429 || !strings.Contains(string(body), "rate_limited") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third dial right after two flood closes: %v %v %s; want 429 rate_limited with Retry-After", err, resp, body)
	}
	alice, _, _, err := rawDial(g.Addr, "/ws", bearer(token(t, auth.Claims{Sub: "alice"})))
	if err != nil || alice == nil {
		t.Fatalf("another player was refused: %v", err)
	}
	alice.Close()
	testenv.Eventually(t, 30*time.Second, "mallory's slots given back", func() error {
		ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(mallory))
		if err != nil {
			return err
		}
		if ws == nil {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		ws.Close()
		return nil
	})
}

// floodOnce dials with tok, floods empty pings, and returns the close code
// the gateway answered with.
func floodOnce(g *gateway, tok string) (int, error) {
	ws, resp, body, err := rawDial(g.Addr, "/ws", bearer(tok))
	if err != nil {
		return 0, err
	}
	if ws == nil {
		return 0, fmt.Errorf("refused: %d %s", resp.StatusCode, body)
	}
	defer ws.Close()
	go func() {
		batch := bytes.Repeat([]byte{opPing | 0x80, 0x80, 0, 0, 0, 0}, 256)
		for {
			ws.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := ws.c.Write(batch); err != nil {
				return // closed
			}
		}
	}()
	for {
		f, err := ws.read(10 * time.Second)
		if err != nil {
			return 0, err
		}
		if f.op == opClose {
			return f.closeCode(), nil
		}
	}
}
