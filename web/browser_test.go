package web

// Browser end-to-end tests: the real gateway binary (built from
// ./cmd/wsgateway, run with --dev), Debian's chromium driven by chromedp, and
// assertions only on observed DOM state, polled with deadlines. Screenshots go
// to $LB_TESTOUT/web (default <repo>/testout/web).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

func TestBrowser(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BuildGateway(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := testOut(t, root)

	gw := startGateway(t, bin, testenv.FreePort(t))
	b := newBrowser(t, chrome)

	t.Run("spectator", func(t *testing.T) { testSpectator(t, b, gw, out) })
	t.Run("player", func(t *testing.T) { testPlayer(t, b, gw, out) })
	t.Run("player tiers", func(t *testing.T) { testPlayerTiers(t, b, gw) })
	t.Run("player top names at desktop widths", func(t *testing.T) { testPlayerTopNames(t, b, gw, out) })
	t.Run("player standing", func(t *testing.T) { testPlayerStanding(t, b, gw) })
	t.Run("play link token", func(t *testing.T) { testPlayLinkToken(t, b, gw) })
	t.Run("player on a sharded board", func(t *testing.T) { testShardedPlayer(t, b, gw, out) })
	t.Run("cohorts and leagues", func(t *testing.T) { testCohorts(t, b, gw, out) })
	t.Run("player on best and set boards", func(t *testing.T) { testPlayerValueModes(t, b, gw) })
	t.Run("replay links", func(t *testing.T) { testReplayLinks(t, b, gw, out) })
	t.Run("last runs", func(t *testing.T) { testLastRuns(t, b, gw, out) })
	t.Run("board list", func(t *testing.T) { testBoardList(t, b, gw, out) })
	t.Run("honest states", func(t *testing.T) { testHonestStates(t, b, gw, bin) })
	t.Run("embedding", func(t *testing.T) { testEmbedding(t, b, gw, bin) })
	t.Run("overlay", func(t *testing.T) { testOverlayLive(t, b, gw, out) })
	t.Run("overlay deltas fade", func(t *testing.T) { testOverlayDeltaFades(t, b, gw, out) })
	t.Run("lifecycle on the gateway", func(t *testing.T) { testLifecycleLive(t, b, gw) })
	t.Run("hot and derived boards", func(t *testing.T) { testHotAndDerived(t, b, gw) })
	t.Run("example game", func(t *testing.T) { testGame(t, b, gw, out) })
	t.Run("reconnect after restart", func(t *testing.T) { testReconnect(t, b, gw, out) })
}

// testSpectator: the page shows a board's entries, then follows a new leader
// scored through another connection without a reload, and a followed member's view.
func testSpectator(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	gw.score(t, admin, "cup", map[string]int64{"alice": 30, "bob": 20, "carol": 10})

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/?board=cup"))
	tab.waitFor(t, 10*time.Second, "the board's entries", `members() === "alice,bob,carol"`)
	tab.waitFor(t, 2*time.Second, "total and status", `text("#total") === "3" && attr("#conn", "data-status") === "open"`)
	tab.waitFor(t, 2*time.Second, "time since the last frame", `/ago$/.test(text("#age"))`)
	tab.shot(t, out, "spectator-1-board")

	// A new leader scored over REST (another connection): the live table
	// follows within a second, without a reload.
	tab.js(t, `window.__sameDocument = true`)
	start := time.Now()
	gw.score(t, admin, "cup", map[string]int64{"dave": 100})
	tab.waitFor(t, time.Second, "dave leading within a second", `members() === "dave,alice,bob,carol" && text("#total") === "4"`)
	t.Logf("new leader shown %v after the score was acknowledged", time.Since(start).Round(time.Millisecond))
	tab.waitFor(t, time.Second, "no reload", `window.__sameDocument === true`)
	tab.shot(t, out, "spectator-2-new-leader")

	// Follow bob by clicking his name; carol then overtakes him.
	tab.run(t, chromedp.Click(chromedp.CSS(`#rows tr[data-member="bob"] button.pick`)))
	tab.waitFor(t, 5*time.Second, "bob's view", `!q("#view").hidden && text("#view-rank") === "#3" && text("#view-score") === "20"`)
	gw.score(t, admin, "cup", map[string]int64{"carol": 15})
	tab.waitFor(t, 5*time.Second, "bob overtaken", `text("#view-rank") === "#4" && members("#view-rows").includes("carol,bob")`)
	tab.shot(t, out, "spectator-3-follow")

	// Phone width: nothing wider than the screen.
	tab.run(t, chromedp.EmulateViewport(390, 844))
	tab.waitFor(t, 5*time.Second, "no horizontal overflow at phone width", `document.documentElement.scrollWidth <= window.innerWidth`)
	tab.shot(t, out, "spectator-4-phone")
	tab.checkNoErrors(t)
}

// testPlayer: choose a name, score with a click, see the ack's rank, be
// overtaken, score again.
func testPlayer(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=arena"))
	tab.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Zoe Q"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	tab.waitFor(t, 5*time.Second, "the ack's rank", `text("#ack-rank") === "#1" && text("#ack-score") === "10"`)
	tab.waitFor(t, 5*time.Second, "the live view", `text("#my-rank") === "#1" && members("#around-rows") === "zoe-q"`)

	gw.score(t, admin, "arena", map[string]int64{"rival": 50})
	tab.waitFor(t, 5*time.Second, "the overtaken notice",
		`!q("#overtaken").hidden && attr("#overtaken", "role") === "alert" && text("#overtaken").includes("rival just passed you") && text("#my-rank") === "#2"`)
	tab.shot(t, out, "player-1-overtaken")

	// The custom delta, typed and sent with the keyboard.
	tab.js(t, `document.querySelector("#custom-input").value = ""`)
	tab.run(t, chromedp.SendKeys(chromedp.CSS(`#custom-input`), "45\r"))
	tab.waitFor(t, 5*time.Second, "back in the lead", `text("#ack-rank") === "#1" && text("#ack-score") === "55" && text("#pending") === "all acknowledged" && q("#overtaken").hidden`)
	tab.waitFor(t, 5*time.Second, "top 10", `members("#top-rows") === "zoe-q,rival"`)
	tab.shot(t, out, "player-2-lead")
	tab.checkNoErrors(t)
}

// testPlayerTiers: the player page names the member's tier from the
// board's tiers (an extension of the contract), and follows the rank.
func testPlayerTiers(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/tiered", admin, map[string]any{"tiers": []map[string]any{
		{"name": "Champion", "top_rank": 1}, {"name": "Contender", "top_rank": 3}}}, &stored)
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=tiered"))
	tab.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Tia"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	tab.waitFor(t, 5*time.Second, "the Champion tier", `text("#my-rank") === "#1" && !q("#tier").hidden && text("#tier") === "Champion"`)
	gw.score(t, admin, "tiered", map[string]int64{"rival": 50})
	tab.waitFor(t, 5*time.Second, "the Contender tier at rank 2", `text("#my-rank") === "#2" && text("#tier") === "Contender"`)
	tab.checkNoErrors(t)
}

// testBoardList: without ?board the page lists boards to pick from.
func testBoardList(t *testing.T, b *browser, gw *gateway, out string) {
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/"))
	tab.waitFor(t, 10*time.Second, "the board list, with member counts and states",
		`[...document.querySelectorAll("#boards a")].some(a => a.getAttribute("href").startsWith("/?board=cup")) &&
		 text('#boards a[data-board="cup"] .meta') === "4 members" && text('#boards a[data-board="cup"] .state') === "live"`)
	tab.shot(t, out, "spectator-0-boards")
	tab.run(t, chromedp.Click(chromedp.CSS(`#boards a[href^="/?board=cup"]`)))
	tab.waitFor(t, 10*time.Second, "the picked board", `text("#title") === "cup" && members().startsWith("dave,alice")`)
	tab.checkNoErrors(t)
}

// testReconnect: the gateway restarts (new process, new dev secret, empty
// memory engine); the page reconnects with a fresh token and resumes the
// live table.
func testReconnect(t *testing.T, b *browser, gw *gateway, out string) {
	gw.score(t, gw.token(t, "ops", "admin"), "live", map[string]int64{"before": 5})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/?board=live"))
	tab.waitFor(t, 10*time.Second, "the first table", `members() === "before" && attr("#conn", "data-status") === "open"`)

	gw.stop(t)
	tab.waitFor(t, 15*time.Second, "the page saying the gateway is unreachable",
		`attr("#conn", "data-status") !== "open" && attr("#conn", "data-state") === "unreachable" &&
		 text("#conn").startsWith("gateway unreachable") && text("#notice").startsWith("The gateway cannot be reached") &&
		 !text("#notice").includes("unauthorized")`)
	tab.shot(t, out, "reconnect-1-down")

	gw.start(t)
	gw.score(t, gw.token(t, "ops", "admin"), "live", map[string]int64{"after": 9})
	tab.waitFor(t, 20*time.Second, "the live table resumed", `members() === "after" && attr("#conn", "data-status") === "open"`)
	gw.score(t, gw.token(t, "ops", "admin"), "live", map[string]int64{"later": 12})
	tab.waitFor(t, 5*time.Second, "live frames after the reconnect", `members() === "later,after"`)
	tab.shot(t, out, "reconnect-2-resumed")
	tab.checkNoErrors(t)
}

// --- the browser ---

type browser struct {
	ctx context.Context
}

func newBrowser(t *testing.T, chrome string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Avatars are https URLs; the tests serve them from httptest's TLS
		// server, whose certificate no browser trusts.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &browser{ctx: ctx}
}

type tab struct {
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage // everything the page's console showed
}

func (b *browser) tab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	tb := &tab{ctx: ctx}
	messages := chromedp.Console(ctx) // subscribed before the first navigation
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			if len(tb.msgs) < 1000 {
				tb.msgs = append(tb.msgs, m)
			}
			tb.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return tb
}

func (tb *tab) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("chromedp: %v", err)
	}
}

// js runs a statement in the page.
func (tb *tab) js(t *testing.T, stmt string) {
	t.Helper()
	if _, err := tb.eval("(() => { " + stmt + "; return ''; })()"); err != nil {
		t.Fatalf("js %s: %v", stmt, err)
	}
}

func (tb *tab) eval(expr string) (string, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](expr))
}

// helpers are defined in the page before each check: q, text, attr,
// members (the data-member order of a table body, #rows by default) and
// lines (how many lines an element's text takes: the distinct tops of its
// line boxes).
const helpers = `const q = (s) => document.querySelector(s);
const text = (s) => (q(s)?.textContent ?? "").trim();
const attr = (s, a) => q(s)?.getAttribute(a) ?? "";
const members = (s = "#rows") => [...document.querySelectorAll(s + " tr")].map((r) => r.dataset.member).join(",");
const lines = (e) => { const r = document.createRange(); r.selectNodeContents(e); return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size; };
`

// waitFor polls a JS condition until it holds or the deadline passes.
func (tb *tab) waitFor(t *testing.T, within time.Duration, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(within)
	expr := "(() => { " + helpers + " try { return String(!!(" + cond + ")); } catch (e) { return String(e); } })()"
	for {
		got, err := tb.eval(expr)
		if err == nil && got == "true" {
			return
		}
		if time.Now().After(deadline) {
			state, _ := tb.eval(`(() => { ` + helpers + ` return JSON.stringify({rows: members(), status: attr("#conn", "data-status"), notice: text("#notice"), total: text("#total"), view: text("#view-rank"), ack: text("#ack-rank") + " " + text("#ack-score"), ackline: text("#ackline"), overtaken: text("#overtaken"), state: attr("#conn", "data-state"), badge: text("#conn"), wide: [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 1).slice(0, 6).map((e) => e.tagName + "." + e.className + "#" + e.id + ":" + Math.round(e.getBoundingClientRect().right))}); })()`)
			t.Fatalf("waiting %v for %s (%s): got %q, err %v; page state %s; console:\n%s", within, what, cond, got, err, state, tb.console())
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a wait for an outcome
	}
}

func (tb *tab) shot(t *testing.T, dir, name string) {
	t.Helper()
	// Let short animations (row moves, highlights) finish so the picture shows
	// the settled page; a page that never settles is still photographed.
	settle := time.Now().Add(3 * time.Second)
	for time.Now().Before(settle) {
		got, err := tb.eval(`String(document.getAnimations().every((a) => a.playState !== "running" || !(a.effect?.getTiming().duration <= 1500)))`)
		if err != nil || got == "true" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

func (tb *tab) console() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	for _, m := range tb.msgs {
		fmt.Fprintf(&b, "  [%s] %s\n", m.Source, m)
	}
	return b.String()
}

// checkNoErrors fails on uncaught exceptions, console.error calls and CSP
// violations. Network errors of the browser log (a WebSocket refused while
// the gateway restarts) are expected and only logged.
func (tb *tab) checkNoErrors(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, m := range tb.msgs {
		bad := m.IsException() ||
			(m.Type == chromedp.ConsoleError && m.Source == "") ||
			m.Source == "security" ||
			strings.Contains(m.Text, "Content Security Policy")
		if bad {
			t.Errorf("page error: %s", m)
		} else {
			t.Logf("page console: [%s] %s", m.Source, m)
		}
	}
}

// --- the gateway process ---

type gateway struct {
	bin, addr, url string
	args, env      []string // besides --addr and the test's defaults
	logs           *testenv.LogBuffer
	cmd            *exec.Cmd
	done           chan struct{}
}

// startGateway runs the binary with --dev and args; env replaces the
// default LB_JWT_SECRET= (a random dev secret per start).
func startGateway(t *testing.T, bin string, port int, args ...string) *gateway {
	return startGatewayEnv(t, bin, port, []string{"LB_JWT_SECRET="}, append([]string{"--dev"}, args...)...)
}

func startGatewayEnv(t *testing.T, bin string, port int, env []string, args ...string) *gateway {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	gw := &gateway{bin: bin, addr: addr, url: "http://" + addr, logs: &testenv.LogBuffer{Max: 1 << 20}, args: args, env: env}
	t.Cleanup(func() {
		gw.kill()
		if t.Failed() {
			t.Logf("gateway log (tail):\n%s", gw.logs.Tail(6000))
		}
	})
	gw.start(t)
	return gw
}

// start runs the binary and waits until /healthz answers.
func (gw *gateway) start(t *testing.T) {
	t.Helper()
	args := append([]string{"--addr", gw.addr, "--top-interval", "100ms", "--node-id", "browser-test", "--drain-timeout", "2s"}, gw.args...)
	cmd := exec.Command(gw.bin, args...)
	cmd.Stdout, cmd.Stderr = gw.logs, gw.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), gw.env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	gw.cmd, gw.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("gateway exited at start; log:\n%s", gw.logs.Tail(4000))
		default:
		}
		res, err := http.Get(gw.url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not answer /healthz: %v; log:\n%s", err, gw.logs.Tail(4000))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop is SIGTERM and the wait for the exit (R14 drains within the timeout).
func (gw *gateway) stop(t *testing.T) {
	t.Helper()
	if gw.cmd == nil {
		return
	}
	syscall.Kill(-gw.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-gw.done:
	case <-time.After(15 * time.Second):
		t.Errorf("gateway did not exit 15s after SIGTERM")
		gw.kill()
	}
	gw.cmd = nil
}

func (gw *gateway) kill() {
	if gw.cmd == nil {
		return
	}
	syscall.Kill(-gw.cmd.Process.Pid, syscall.SIGKILL)
	<-gw.done
	gw.cmd = nil
}

func (gw *gateway) post(t *testing.T, path, token string, body any, into any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, gw.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, rb)
	}
	if err := json.Unmarshal(rb, into); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, rb)
	}
}

func (gw *gateway) token(t *testing.T, sub, role string) string {
	t.Helper()
	var got struct{ Token string }
	gw.post(t, "/api/v1/dev/token", "", map[string]string{"sub": sub, "role": role}, &got)
	if got.Token == "" {
		t.Fatal("dev token: empty")
	}
	return got.Token
}

// score sends one delta per member over REST and checks every result is an
// ack (with a score: a sharded board's has no rank, R24).
func (gw *gateway) score(t *testing.T, token, board string, deltas map[string]int64) {
	t.Helper()
	var events []map[string]any
	for m, d := range deltas {
		events = append(events, map[string]any{"id": fmt.Sprintf("bt-%s-%d", m, time.Now().UnixNano()), "member": m, "delta": d})
	}
	var results []map[string]any
	gw.post(t, "/api/v1/boards/"+board+"/scores", token, events, &results)
	for i, r := range results {
		if _, failed := r["error"]; failed || r["score"] == nil {
			t.Fatalf("score %v: %v", events[i], r)
		}
	}
}

// --- paths ---

func testOut(t *testing.T, root string) string {
	t.Helper()
	base := os.Getenv("LB_TESTOUT")
	if base == "" {
		base = filepath.Join(root, "testout")
	}
	dir := filepath.Join(base, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testHonestStates: what the badge says when the token may not read the
// board (dev gateway) and when the board does not exist (a gateway without
// --dev, where boards are not created on first use).
func testHonestStates(t *testing.T, b *browser, gw *gateway, bin string) {
	var tok struct{ Token string }
	gw.post(t, "/api/v1/dev/token", "", map[string]any{"sub": "fan", "role": "spectator", "boards": []string{"other"}}, &tok)
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/?board=cup#token="+tok.Token))
	tab.waitFor(t, 10*time.Second, "not allowed, under a connected but not live badge",
		`attr("#conn", "data-status") === "open" && attr("#conn", "data-state") === "forbidden" && text("#conn") === "not allowed" &&
		 text("#notice") === "This token is not allowed on this board." && members() === ""`)
	tab.checkNoErrors(t)

	const secret = "browser-test-secret-0123456789abcdef"
	strict := startGatewayEnv(t, bin, testenv.FreePort(t), []string{"LB_JWT_SECRET=" + secret})
	out, err := exec.Command(bin, "token", "--secret", secret, "--sub", "viewer", "--role", "spectator", "--ttl", "1h").Output()
	if err != nil {
		t.Fatalf("wsgateway token: %v", err)
	}
	tab2 := b.tab(t)
	tab2.run(t, chromedp.Navigate(strict.url+"/?board=nosuch#token="+strings.TrimSpace(string(out))))
	tab2.waitFor(t, 10*time.Second, "no such board",
		`attr("#conn", "data-state") === "unknown" && text("#conn") === "no such board" && text("#notice") === "There is no board with this id."`)
	// The overlay says the same.
	tab2.run(t, chromedp.Navigate(strict.url+"/overlay?board=nosuch#token="+strings.TrimSpace(string(out))))
	tab2.waitFor(t, 10*time.Second, "no such board on the overlay", `attr("#conn", "data-state") === "unknown" && text("#clock") === ""`)
	tab2.checkNoErrors(t)

	// Without --dev and without #token=: the hint stays, and the page stops
	// after one refused attempt instead of "Retrying with a fresh one…".
	for _, page := range []string{"/?board=cup", "/overlay?board=cup"} {
		bare := b.tab(t)
		bare.run(t, chromedp.Navigate(strict.url+page))
		bare.waitFor(t, 10*time.Second, page+": the token hint, no retry",
			`attr("#conn", "data-state") === "notoken" && attr("#conn", "data-status") === "closed" && text("#conn") === "no token" &&
			 text("#notice").startsWith("This page needs a token: add #token=")`)
		// Stopped for good: still the hint a while later (a retry would have
		// replaced it with "The gateway refused the token. Retrying…").
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			bare.waitFor(t, time.Second, page+": the hint kept", `attr("#conn", "data-status") === "closed" && text("#notice").startsWith("This page needs a token")`)
		}
		// The token added to the address is taken at once.
		bare.js(t, `location.hash = "token=`+strings.TrimSpace(string(out))+`"`)
		bare.waitFor(t, 10*time.Second, page+": connected with the token added", `attr("#conn", "data-status") === "open" && attr("#conn", "data-state") === "unknown"`)
		bare.checkNoErrors(t)
	}

	// Under --dev a mistyped board id subscribes (reads never create a
	// board) but is not shown as a live board; its first score makes it one.
	absent := b.tab(t)
	absent.run(t, chromedp.Navigate(gw.url+"/?board=cupp"))
	absent.waitFor(t, 10*time.Second, "no such board yet, not live",
		`attr("#conn", "data-status") === "open" && attr("#conn", "data-state") === "absent" && text("#conn") === "no such board yet" &&
		 text("#notice").startsWith("There is no board with this id yet")`)
	ov := b.tab(t)
	ov.run(t, chromedp.Navigate(gw.url+"/overlay?board=cupp"))
	ov.waitFor(t, 10*time.Second, "no such board yet on the overlay", `attr("#conn", "data-state") === "absent" && text("#notice").startsWith("There is no board")`)
	gw.score(t, gw.token(t, "ops", "admin"), "cupp", map[string]int64{"first": 1})
	absent.waitFor(t, 10*time.Second, "live after its first score", `attr("#conn", "data-state") === "live" && members() === "first" && text("#notice") === ""`)
	ov.waitFor(t, 10*time.Second, "live on the overlay after its first score", `attr("#conn", "data-state") === "live" && members() === "first"`)
	absent.checkNoErrors(t)
	ov.checkNoErrors(t)
}

// testPlayerValueModes: on best and set boards the player page offers a
// value to enter, not +1/+10/+100, and the server keeps the best or the last.
func testPlayerValueModes(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/bestrun", admin, map[string]any{"mode": "best"}, &stored)
	gw.put(t, "/api/v1/boards/lastrun", admin, map[string]any{"mode": "set"}, &stored)
	for _, c := range []struct{ board, keep string }{{"bestrun", "500"}, {"lastrun", "300"}} {
		tab := b.tab(t)
		tab.run(t, chromedp.Navigate(gw.url+"/play?board="+c.board))
		tab.run(t,
			chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
			chromedp.SendKeys(chromedp.CSS(`#name-input`), "Val"),
			chromedp.Click(chromedp.CSS(`#join-btn`)),
		)
		tab.waitFor(t, 10*time.Second, c.board+": value entry instead of deltas",
			`attr("#conn", "data-status") === "open" && q("#pad").hidden && attr("#custom-form", "data-mode") === "value" && text("#custom-label").startsWith("Your score")`)
		for _, v := range []string{"500", "300"} {
			tab.js(t, `document.querySelector("#custom-input").value = ""`)
			tab.run(t, chromedp.SendKeys(chromedp.CSS(`#custom-input`), v+"\r"))
			tab.waitFor(t, 5*time.Second, c.board+": the ack of "+v, `text("#ackline").startsWith("`+v+` → ") && text("#pending") === "all acknowledged"`)
		}
		tab.waitFor(t, 5*time.Second, c.board+": the kept score", `text("#ack-score") === "`+c.keep+`"`)
		tab.checkNoErrors(t)
	}
}

// testOverlayLive: the overlay on the real gateway: the title from the
// board's config, N rows, a new leader.
func testOverlayLive(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/show", admin, map[string]any{"title": "Grand Final"}, &stored)
	gw.score(t, admin, "show", map[string]int64{"ann": 50, "ben": 40, "cat": 30, "dan": 20})
	tab := b.tab(t)
	tab.run(t, chromedp.EmulateViewport(1920, 1080))
	tab.run(t, chromedp.Navigate(gw.url+"/overlay?board=show&rows=3&bg=0b1220"))
	tab.waitFor(t, 10*time.Second, "three rows and the title",
		`members() === "ann,ben,cat" && text("#title") === "Grand Final" && attr("#conn", "data-state") === "live"`)
	tab.js(t, recordAnimations)
	gw.score(t, admin, "show", map[string]int64{"cat": 25})
	tab.waitFor(t, 5*time.Second, "cat in the lead, animated",
		`members() === "cat,ann,ben" && window.__anims.some((a) => a.member === "ann" && a.kf.includes("translateY"))`)
	tab.shot(t, out, "overlay-live-gateway")
	tab.checkNoErrors(t)
}

// testLifecycleLive: a board whose end the admin brings forward, then whose
// grace the admin cuts short, on the real gateway (its board frames, schedule
// changes and final top frame, R19): the overlay counts down to the end, then
// to the final standings, then shows them with the final banner; the
// spectator page of a board that is then deleted says so.
func testLifecycleLive(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	// The schedule is moved by the test as the page shows each state, so a
	// slow page load on a loaded box cannot skip one: far off first, then
	// the end brought forward with a long grace, then the grace cut short.
	schedule := func(ends time.Time, grace string) {
		var stored map[string]any
		gw.put(t, "/api/v1/boards/cupfinal", admin, map[string]any{"title": "Cup final",
			"ends_at": ends.UTC().Format(time.RFC3339Nano), "grace": grace}, &stored)
	}
	schedule(time.Now().Add(10*time.Minute), "1m")
	gw.score(t, admin, "cupfinal", map[string]int64{"ann": 30, "ben": 20})
	tab := b.tab(t)
	tab.run(t, chromedp.EmulateViewport(1280, 900))
	tab.run(t, chromedp.Navigate(gw.url+"/overlay?board=cupfinal&rows=3"))
	tab.waitFor(t, 10*time.Second, "the rows and the countdown to the end",
		`members() === "ann,ben" && /^ends in \d+:\d\d$/.test(text("#clock")) && attr("#conn", "data-state") === "live"`)
	ends := time.Now().Add(2 * time.Second)
	schedule(ends, "1m")
	tab.waitFor(t, 15*time.Second, "closing: the countdown to the final standings",
		`attr("#conn", "data-state") === "closing" && /^final in 0:[0-5]\d$/.test(text("#clock"))`)
	schedule(ends, "1s")
	tab.waitFor(t, 10*time.Second, "final: the banner over the final standings",
		`attr("#conn", "data-state") === "final" && !q("#final-banner").hidden && text("#final-text") === "Final standings" && members() === "ann,ben"`)
	tab.checkNoErrors(t)

	spec := b.tab(t)
	spec.run(t, chromedp.Navigate(gw.url+"/?board=cupfinal"))
	spec.waitFor(t, 10*time.Second, "the final board", `attr("#conn", "data-state") === "final" && text("#conn") === "final"`)
	req, err := http.NewRequest(http.MethodDelete, gw.url+"/api/v1/boards/cupfinal", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}
	spec.waitFor(t, 10*time.Second, "deleted",
		`attr("#conn", "data-state") === "deleted" && text("#conn") === "board deleted" && text("#notice") === "This board was deleted."`)
	spec.checkNoErrors(t)
}

// testHotAndDerived: a hot board's scores show their 3 decimals (R22: the
// wire's 5.000 is 5 once parsed, the page takes the decimals from the
// config), and a union follows an event on one of its sources live.
func testHotAndDerived(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/trend", admin, map[string]any{"decay": map[string]any{"bucket": "1h", "buckets": 24, "factor": 0.9}}, &stored)
	gw.score(t, admin, "trend", map[string]int64{"alice": 5, "bob": 2})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/?board=trend"))
	tab.waitFor(t, 10*time.Second, "hot scores with 3 decimals",
		`members() === "alice,bob" && text('#rows tr[data-member="alice"] .score') === "5.000" && text('#rows tr[data-member="bob"] .score') === "2.000"`)
	tab.checkNoErrors(t)

	for _, id := range []string{"moba", "racing"} {
		gw.put(t, "/api/v1/boards/"+id, admin, map[string]any{"group": "cats"}, &stored)
	}
	gw.put(t, "/api/v1/boards/allcats", admin, map[string]any{"group": "cats",
		"source": map[string]any{"kind": "union", "boards": []string{"moba", "racing"}, "weights": []int{1, 2}}}, &stored)
	gw.score(t, admin, "moba", map[string]int64{"ann": 3, "ben": 4})
	u := b.tab(t)
	u.run(t, chromedp.Navigate(gw.url+"/?board=allcats"))
	u.waitFor(t, 10*time.Second, "the union", `members() === "ben,ann" && text('#rows tr[data-member="ann"] .score') === "3"`)
	gw.score(t, admin, "racing", map[string]int64{"ann": 1})
	u.waitFor(t, 5*time.Second, "ann ahead after 3 + 2×1 on the union", `members() === "ann,ben" && text('#rows tr[data-member="ann"] .score') === "5"`)
	u.checkNoErrors(t)
}

// testEmbedding: a page on another origin frames the overlay and reads top
// over REST; it works only with --frame-ancestors and --cors-origins naming it.
func testEmbedding(t *testing.T, b *browser, off *gateway, bin string) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := r.URL.Query().Get("gw")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><h1>Tournament</h1>
<iframe id="ov" width="800" height="400" src="%[1]s/overlay?board=emb&rows=3"></iframe>
<script>
window.__overlay = null; window.__top = null; window.__topErr = "";
addEventListener("message", (ev) => { if (ev.data && ev.data.type === "lb-overlay") window.__overlay = ev.data; });
(async () => {
  try {
    const t = await (await fetch("%[1]s/api/v1/dev/token", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"sub":"site","role":"spectator"}'})).json();
    window.__top = await (await fetch("%[1]s/api/v1/boards/emb/top?limit=3", {headers: {Authorization: "Bearer " + t.token}})).json();
  } catch (e) { window.__topErr = String(e); }
})();
</script></body></html>`, gw)
	}))
	t.Cleanup(site.Close)
	on := startGateway(t, bin, testenv.FreePort(t), "--frame-ancestors", site.URL, "--cors-origins", site.URL)
	for _, gw := range []*gateway{on, off} {
		admin := gw.token(t, "ops", "admin")
		gw.score(t, admin, "emb", map[string]int64{"xia": 7, "yan": 5})
	}

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(site.URL+"/?gw="+on.url))
	tab.waitFor(t, 10*time.Second, "the framed overlay and the REST read, allowed",
		`window.__overlay && window.__overlay.board === "emb" && window.__overlay.rows === 2 &&
		 window.__top && window.__top.entries.map((e) => e.member).join() === "xia,yan"`)
	tab.checkNoErrors(t)

	blocked := b.tab(t)
	blocked.run(t, chromedp.Navigate(site.URL+"/?gw="+off.url))
	blocked.waitFor(t, 10*time.Second, "the REST read refused by CORS", `window.__topErr.includes("Failed to fetch") && window.__top === null`)
	testenv.Until(t, 10*time.Second, "the frame refused by frame-ancestors", func() bool {
		return strings.Contains(blocked.console(), "frame-ancestors")
	})
	blocked.waitFor(t, time.Second, "no overlay message from a refused frame", `window.__overlay === null`)
}

func (gw *gateway) put(t *testing.T, path, token string, body any, into any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, gw.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", path, res.StatusCode, rb)
	}
	if err := json.Unmarshal(rb, into); err != nil {
		t.Fatalf("PUT %s: %v in %s", path, err, rb)
	}
}

// testGame: the example game scores through lb-client.js and the overlay
// beside it shows the player. The board is created with an hourly reset:
// the "1m" of examples/game/boards.json needs the v1.1 reset durations.
func testGame(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/minute", admin, map[string]any{"title": "Minute Rush", "reset": "hourly"}, &stored)
	tab := b.tab(t)
	tab.run(t, chromedp.EmulateViewport(1400, 900))
	tab.run(t, chromedp.Navigate(gw.url+"/examples/game/?board=minute"))
	// Typed, as a player would: the suggested name is a placeholder, so the
	// typed one replaces it instead of being appended to it.
	tab.run(t, chromedp.SendKeys(chromedp.CSS(`#name`), "Robin"))
	tab.waitFor(t, time.Second, "the typed name alone", `q("#name").value === "Robin" && /^Player \d+$/.test(q("#name").placeholder)`)
	tab.run(t, chromedp.Click(chromedp.CSS(`#start`)))
	for i := range 3 {
		tab.waitFor(t, 5*time.Second, "a target", `!!q("#field").dataset.target && attr("#conn", "data-status") === "open"`)
		xy, err := tab.eval(`(() => { const q = (s) => document.querySelector(s); const r = q("#field").getBoundingClientRect(); const [x, y] = q("#field").dataset.target.split(",").map(Number); return (r.left + x) + "," + (r.top + y); })()`)
		if err != nil {
			t.Fatal(err)
		}
		var x, y float64
		if _, err := fmt.Sscanf(xy, "%f,%f", &x, &y); err != nil {
			t.Fatalf("target %q: %v", xy, err)
		}
		before, _ := tab.eval(`(() => { const q = (s) => document.querySelector(s); return q("#field").dataset.target; })()`)
		tab.run(t, chromedp.MouseClickXY(x, y))
		tab.waitFor(t, 5*time.Second, fmt.Sprintf("hit %d counted", i+1), fmt.Sprintf(`q("#field").dataset.target !== %q && Number(text("#score")) > 0`, before))
	}
	tab.waitFor(t, 5*time.Second, "the ack's rank", `text("#rank") === "#1" && text("#title") === "Minute Rush"`)
	tab.waitFor(t, 20*time.Second, "the player on the overlay with the game's score",
		`(() => { const d = q("#overlay").contentDocument; const tr = d && d.querySelector("#rows tr");
		  return !!tr && tr.querySelector(".name").textContent === "Robin" &&
		    tr.querySelector(".score").textContent.replace(/\D/g, "") === text("#score") &&
		    d.querySelector("#title").textContent === "Minute Rush"; })()`)
	tab.shot(t, out, "game")
	tab.checkNoErrors(t)
}
