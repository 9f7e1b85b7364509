package web

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestBrowserResume (§15): the spectator page behind one address (a proxy,
// as a load balancer) while the gateway it is on drains: it is told when
// to reconnect, reconnects through the same address to the other gateway
// (one Redis, one NATS), resumes its subscription, and its table is never
// emptied nor redrawn (no flicker: the board did not change); then it
// follows the board live on the new gateway.
func TestBrowserResume(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	bin, err := testenv.BuildGateway(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	redis, nats := testenv.StartRedis(t), testenv.StartNATS(t)
	const secret = "browser-resume-secret-0123456789abcdef"
	shared := []string{"--redis-url", redis.URL(), "--nats-url", nats.URL(), "--jwt-secret", secret, "--drain-timeout", "4s"}
	mint := func(sub string, role auth.Role) string {
		tok, err := auth.MintHS256([]byte(secret), auth.Claims{Sub: sub, Role: role, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a := startGateway(t, bin, testenv.FreePort(t), append(shared, "--node-id", "gw-a")...)
	bgw := startGateway(t, bin, testenv.FreePort(t), append(shared, "--node-id", "gw-b")...)
	front := newSwitch(t, a.addr)
	page := "http://" + front.addr

	admin := mint("ops", auth.Admin)
	a.score(t, admin, "drained", map[string]int64{"ann": 30, "ben": 20, "cal": 10})
	b := newBrowser(t, chrome)
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(page+"/?board=drained#token="+mint("fan", auth.Spectator)))
	tab.waitFor(t, 10*time.Second, "the table on gw-a", `members() === "ann,ben,cal" && text("#node") === "gw-a" && attr("#conn", "data-status") === "open"`)
	// Every change of the table from now on is counted, and every status.
	tab.js(t, `window.__rowChanges = 0; window.__fewest = document.querySelector("#rows").children.length; window.__statuses = [];
		new MutationObserver(() => { window.__rowChanges++; window.__fewest = Math.min(window.__fewest, document.querySelector("#rows").children.length); })
			.observe(document.querySelector("#rows"), { childList: true, subtree: true, characterData: true });
		new MutationObserver(() => window.__statuses.push(document.body.dataset.status))
			.observe(document.body, { attributes: true, attributeFilter: ["data-status"] });`)

	front.to(bgw.addr) // what a load balancer does for a node that drains
	a.stop(t)
	tab.waitFor(t, 15*time.Second, "the page on gw-b", `text("#node") === "gw-b" && attr("#conn", "data-status") === "open"`)
	// The page is open on gw-b at the welcome; its subscribe with since
	// follows, so the count is awaited, then must be exactly the one.
	resumed := func() float64 { return metricValue(t, bgw, `wsgateway_resumes_total{result="resumed"}`) }
	testenv.Until(t, 5*time.Second, "gw-b's resume of the page", func() bool { return resumed() > 0 })
	if got, fresh := resumed(), metricValue(t, bgw, `wsgateway_resumes_total{result="fresh"}`); got != 1 || fresh != 0 {
		t.Fatalf("gw-b answered %v resumes and %v fresh subscribes, want the page's one resume", got, fresh)
	}
	tab.waitFor(t, 2*time.Second, "the table untouched through the drain",
		`window.__rowChanges === 0 && window.__fewest === 3 && members() === "ann,ben,cal"`)
	statuses, _ := tab.eval(`JSON.stringify(window.__statuses)`)
	t.Logf("statuses through the drain: %s", statuses)

	bgw.score(t, admin, "drained", map[string]int64{"dee": 50})
	tab.waitFor(t, 5*time.Second, "live frames on gw-b", `members() === "dee,ann,ben,cal"`)
	tab.checkNoErrors(t)
}

// metricValue reads one sample of gw's /metrics (0 when absent).
func metricValue(t *testing.T, gw *gateway, sample string) float64 {
	t.Helper()
	res, err := http.Get(gw.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// lbSwitch is a TCP front door whose target can be switched: new
// connections go to the target of the moment, open ones stay where they are.
type lbSwitch struct {
	addr string
	mu   sync.Mutex // guards target
	dst  string
}

func newSwitch(t *testing.T, target string) *lbSwitch {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lbSwitch{addr: ln.Addr().String(), dst: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.relay(c)
		}
	}()
	return s
}

func (s *lbSwitch) to(target string) {
	s.mu.Lock()
	s.dst = target
	s.mu.Unlock()
}

func (s *lbSwitch) relay(c net.Conn) {
	s.mu.Lock()
	dst := s.dst
	s.mu.Unlock()
	u, err := net.Dial("tcp", dst)
	if err != nil {
		c.Close()
		return
	}
	go func() { io.Copy(u, c); u.Close() }()
	io.Copy(c, u)
	c.Close()
}
