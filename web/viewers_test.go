package web

// Viewer counts on the spectator page and the overlay (docs/protocol.md §14,
// docs/overlay.md): against the real gateway, and against the scripted one
// for the wording, which the real one reaches only slowly.

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// viewersWithin bounds the wait for a count: a node looks at a board's
// viewers every 5 s from its first subscription there, so a change shows
// within two looks; the rest is slack for a loaded machine.
const viewersWithin = 20 * time.Second

// TestViewersLive: a spectator page and an overlay with &viewers=1 on the
// same board of a --dev gateway both come to read "2 people watching"; an
// overlay without the parameter shows no count even once the gateway has
// sent it one; a closed tab and a page navigated away from (kept in the
// back/forward cache) bring the count back down.
func TestViewersLive(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	bin, err := testenv.BuildGateway(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := testOut(t, root)
	gw := startGateway(t, bin, testenv.FreePort(t))
	b := newBrowser(t, chrome)
	admin := gw.token(t, "ops", "admin")
	gw.score(t, admin, "watched", map[string]int64{"alice": 30, "bob": 20})

	spectator := b.tab(t)
	spectator.run(t, chromedp.Navigate(gw.url+"/?board=watched"))
	spectator.waitFor(t, 10*time.Second, "the spectator page live", `members() === "alice,bob" && attr("#conn", "data-status") === "open"`)

	counted := b.tab(t)
	counted.run(t, chromedp.Navigate(gw.url+"/overlay?board=watched&viewers=1"))
	counted.waitFor(t, 10*time.Second, "the counting overlay live", `members() === "alice,bob" && attr("#conn", "data-state") === "live"`)

	spectator.waitFor(t, viewersWithin, "two watching on the spectator page",
		`text("#viewers") === "2 people watching" && !q("#viewers").hidden && q("#viewers").closest("#lifecycle") !== null`)
	counted.waitFor(t, viewersWithin, "two watching on the overlay", `text("#viewers") === "2 people watching" && !q("#viewers").hidden`)
	spectator.shot(t, out, "viewers-spectator")
	counted.shot(t, out, "viewers-overlay")

	// A third subscriber, in a subtest whose end closes its tab: once the
	// others read 3, the gateway has sent it the count too, and without
	// &viewers=1 it must not show it.
	t.Run("without the parameter", func(t *testing.T) {
		plain := b.tab(t)
		plain.run(t, chromedp.Navigate(gw.url+"/overlay?board=watched"))
		plain.waitFor(t, 10*time.Second, "the plain overlay live", `members() === "alice,bob" && attr("#conn", "data-state") === "live"`)
		spectator.waitFor(t, viewersWithin, "three watching", `text("#viewers") === "3 people watching"`)
		counted.waitFor(t, viewersWithin, "three watching on the overlay", `text("#viewers") === "3 people watching"`)
		plain.waitFor(t, time.Second, "no count without &viewers=1", `q("#viewers").hidden && text("#viewers") === ""`)
		plain.checkNoErrors(t)
	})

	// Its tab closed, the count comes down again.
	spectator.waitFor(t, viewersWithin, "two watching after one left", `text("#viewers") === "2 people watching"`)
	counted.waitFor(t, viewersWithin, "two watching on the overlay after one left", `text("#viewers") === "2 people watching"`)

	// A page left for another stops counting, though the browser keeps it
	// in its back/forward cache; back on it, it counts again.
	spectator.run(t, chromedp.Navigate("about:blank"))
	counted.waitFor(t, viewersWithin, "one watching once the spectator left", `text("#viewers") === "1 person watching"`)
	spectator.js(t, `history.back()`)
	spectator.waitFor(t, 10*time.Second, "the spectator page back, live", `members() === "alice,bob" && attr("#conn", "data-status") === "open"`)
	counted.waitFor(t, viewersWithin, "two watching again", `text("#viewers") === "2 people watching"`)
	spectator.waitFor(t, viewersWithin, "two watching on the page come back", `text("#viewers") === "2 people watching"`)

	// The player page too: it subscribes to its board, so it counts, and
	// stops counting while it sits in the back/forward cache.
	player := b.tab(t)
	player.run(t, chromedp.Navigate(gw.url+"/play?board=watched"))
	player.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Pat"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	player.waitFor(t, 10*time.Second, "the player page connected", `attr("#conn", "data-status") === "open"`)
	counted.waitFor(t, viewersWithin, "three watching with the player page", `text("#viewers") === "3 people watching"`)
	player.run(t, chromedp.Navigate("about:blank"))
	counted.waitFor(t, viewersWithin, "two watching once the player page left", `text("#viewers") === "2 people watching"`)
	player.js(t, `history.back()`)
	player.waitFor(t, 10*time.Second, "the player page back, connected", `attr("#conn", "data-status") === "open"`)
	counted.waitFor(t, viewersWithin, "three watching with the player page back", `text("#viewers") === "3 people watching"`)

	spectator.checkNoErrors(t)
	counted.checkNoErrors(t)
	player.checkNoErrors(t)
}

// TestViewersWording: the scripted gateway's board frames drive the count:
// hidden while unknown (its GET has no viewers, a frame without them says
// nothing), one person, many people with the digits grouped, the last count
// kept through a frame without one, and gone with a deleted board.
func TestViewersWording(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	b := newBrowser(t, chrome)
	gw := newFakeGW(t)
	gw.setBoard("cup", map[string]any{"title": "Spring Cup", "reset": "none"})

	spectator := b.tab(t)
	spectator.run(t, chromedp.Navigate(gw.srv.URL+"/?board=cup"))
	counted := b.tab(t)
	counted.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=cup&viewers=1"))
	plain := b.tab(t)
	plain.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=cup"))
	testenv.Until(t, 10*time.Second, "three subscriptions", func() bool { return gw.subscribed("cup") == 3 })
	tabs := []*tab{spectator, counted, plain}

	now := gw.now()
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "open", "starts_at": now})
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 1, "entries": []map[string]any{entry(1, "alice", 10, "", "", "")}, "total": 1})
	for _, tb := range tabs {
		tb.waitFor(t, 5*time.Second, "live, no count yet", `members() === "alice" && q("#viewers").hidden && text("#viewers") === ""`)
	}

	gw.push(map[string]any{"type": "board", "board": "cup", "state": "open", "starts_at": now, "viewers": 1})
	spectator.waitFor(t, 5*time.Second, "one person", `text("#viewers") === "1 person watching" && !q("#viewers").hidden`)
	counted.waitFor(t, 5*time.Second, "one person on the overlay", `text("#viewers") === "1 person watching" && !q("#viewers").hidden`)

	gw.push(map[string]any{"type": "board", "board": "cup", "state": "open", "starts_at": now, "viewers": 1234})
	spectator.waitFor(t, 5*time.Second, "many people", `text("#viewers") === "1,234 people watching"`)
	counted.waitFor(t, 5*time.Second, "many people on the overlay", `text("#viewers") === "1,234 people watching"`)

	// A lifecycle frame without viewers keeps the count; the plain overlay
	// has shown none of them.
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "closing", "starts_at": now, "ends_at": now, "final_at": now + 60_000})
	spectator.waitFor(t, 5*time.Second, "the count kept through a frame without it",
		`attr("#conn", "data-state") === "closing" && text("#viewers") === "1,234 people watching"`)
	counted.waitFor(t, 5*time.Second, "the overlay's count kept", `text("#viewers") === "1,234 people watching"`)
	plain.waitFor(t, 5*time.Second, "no count without &viewers=1", `attr("#conn", "data-state") === "closing" && q("#viewers").hidden && text("#viewers") === ""`)

	gw.push(map[string]any{"type": "board", "board": "cup", "state": "deleted"})
	spectator.waitFor(t, 5*time.Second, "no count on a deleted board", `attr("#conn", "data-state") === "deleted" && q("#viewers").hidden`)
	counted.waitFor(t, 5*time.Second, "no count on the overlay of a deleted board", `q("#viewers").hidden`)
	for _, tb := range tabs {
		tb.checkNoErrors(t)
	}
}

// TestViewersFromGET: before any board frame tells the viewers, the pages
// show the count of GET /api/v1/boards/{board} at load. The scripted
// gateway's GET has no viewers, so the test adds them to its answer in the
// page's fetch, installed before the page's own scripts.
func TestViewersFromGET(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	b := newBrowser(t, chrome)
	gw := newFakeGW(t)
	gw.setBoard("gala", map[string]any{"title": "Gala", "reset": "none"})
	const addViewers = `const fetch0 = window.fetch;
window.fetch = async (url, opts) => {
  const r = await fetch0(url, opts);
  if (!String(url).endsWith("/api/v1/boards/gala") || !r.ok) return r;
  const j = await r.json();
  return new Response(JSON.stringify({ ...j, viewers: 7 }), { status: r.status, headers: r.headers });
};`
	for _, path := range []string{"/?board=gala", "/overlay?board=gala&viewers=1"} {
		tb := b.tab(t)
		if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: addViewers}); err != nil {
			t.Fatal(err)
		}
		tb.run(t, chromedp.Navigate(gw.srv.URL+path))
		tb.waitFor(t, 10*time.Second, path+": the GET's count", `text("#viewers") === "7 people watching" && !q("#viewers").hidden`)
		tb.checkNoErrors(t)
	}
}
