package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// keepAlive is one HTTP/1.1 connection kept open between requests.
type keepAlive struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKeepAlive(addr string) (*keepAlive, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &keepAlive{c: c, br: bufio.NewReader(c)}, nil
}

// get sends GET path on the connection and returns the answer's status.
func (k *keepAlive) get(path string) (int, error) {
	k.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(k.c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// TestDescriptorExhaustion is R32 (issue 33 B0): a gateway at its
// file-descriptor limit refuses what it cannot take, keeps serving the
// connections it has, and accepts again once descriptors are free. Before
// the fix the first EMFILE closed the listener and the node exited.
func TestDescriptorExhaustion(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOpts{})
	// Two keep-alive connections opened before the limit, one for the
	// API (fiber) and one for a page (net/http through the adaptor).
	var held []*keepAlive
	for _, p := range []string{"/healthz", "/"} {
		k, err := dialKeepAlive(g.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer k.c.Close()
		if st, err := k.get(p); err != nil || st != 200 {
			t.Fatalf("GET %s before the limit: %d %v", p, st, err)
		}
		held = append(held, k)
	}
	// Lower the running gateway's limit far below what the flood needs.
	const limit = 64
	if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(g.Pid()), "--nofile="+strconv.Itoa(limit)+":"+strconv.Itoa(limit)).CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v %s", err, out)
	}
	const flood = 4 * limit
	var conns []net.Conn
	for range flood {
		c, err := net.DialTimeout("tcp", g.Addr, 5*time.Second)
		if err != nil {
			continue // the backlog is full: refused, as it should be
		}
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		conns = append(conns, c)
	}
	// Wait until the gateway has met the limit: its log says so, or it
	// has exited.
	testenv.Until(t, 20*time.Second, "the gateway out of descriptors", func() bool {
		return strings.Contains(g.Logs(), "accept failed") || g.exited()
	})
	if g.exited() {
		t.Fatalf("the gateway exited at its descriptor limit: %v\n%s", g.exitErr(), g.logTail())
	}
	for i, k := range held {
		p := []string{"/healthz", "/"}[i]
		if st, err := k.get(p); err != nil || st != 200 {
			t.Fatalf("GET %s on a connection held through the limit: %d %v\n%s", p, st, err, g.logTail())
		}
	}
	for _, c := range conns {
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testenv.Eventually(t, 20*time.Second, "a new connection served after the flood", func() error {
		st, _, err := rest(ctx, "GET", g.HTTP()+"/healthz", "", nil, nil)
		if err == nil && st != 200 {
			t.Fatalf("/healthz after the flood: %d", st)
		}
		return err
	})
	st, body, err := rest(ctx, "GET", g.HTTP()+"/metrics", "", nil, nil)
	if err != nil || st != 200 {
		t.Fatalf("/metrics: %d %v", st, err)
	}
	m := regexp.MustCompile(`(?m)^wsgateway_accept_errors_total (\d+)`).FindSubmatch(body)
	if m == nil || string(m[1]) == "0" {
		t.Fatalf("wsgateway_accept_errors_total = %q, want the refusals counted", m)
	}
	if g.exited() {
		t.Fatalf("the gateway exited: %v", g.exitErr())
	}
	t.Logf("%d of %d flood connections dialled; %s accept errors counted", len(conns), flood, m[1])
}

// exited reports whether the gateway process has ended.
func (g *gateway) exited() bool {
	g.mu.Lock()
	done := g.done
	g.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}
