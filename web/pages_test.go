package web

// Page tests against the scripted lb.v1 server of fakegw_test.go: the v1.1
// lifecycle (board frames, countdowns, final frames), profiles (avatars,
// flags), the overlay's options and theme, and the honest states that need a
// server answer the gateway does not give yet (deleted boards).

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

func TestPages(t *testing.T) {
	testenv.Long(t)
	chrome := testenv.Chromium(t)
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := testOut(t, root)
	b := newBrowser(t, chrome)
	av := avatarServer(t)

	t.Run("overlay", func(t *testing.T) { testOverlay(t, b, av.URL, out) })
	t.Run("overlay reduced motion", func(t *testing.T) { testOverlayReducedMotion(t, b) })
	t.Run("overlay round final", func(t *testing.T) { testOverlayRoundFinal(t, b) })
	t.Run("spectator lifecycle", func(t *testing.T) { testSpectatorLifecycle(t, b, av.URL, out) })
	t.Run("player attempts", func(t *testing.T) { testPlayerAttempts(t, b) })
	t.Run("token valid for years", func(t *testing.T) { testLongToken(t, b) })
	t.Run("overlay theme takes colours only", func(t *testing.T) { testOverlayThemeColours(t, b) })
	t.Run("scores on one line", func(t *testing.T) { testScoresOneLine(t, b, out) })
}

// recordAnimations wraps Element.animate so a test can see which moves ran.
const recordAnimations = `window.__anims = [];
const orig = Element.prototype.animate;
Element.prototype.animate = function (kf, opts) {
  window.__anims.push({ member: this.dataset?.member || "", kf: JSON.stringify(kf) });
  return orig.call(this, kf, opts);
}`

func cupEntries(av string) []map[string]any {
	return []map[string]any{
		entry(1, "alice", 3200, "Alice", av+"/alice.svg", "FR"),
		entry(2, "li", 3100, "李小龍", av+"/li.svg", "JP"),
		entry(3, "emo", 2900, "😀 Emoji", "", "US"),
	}
}

func testOverlay(t *testing.T, b *browser, av, out string) {
	gw := newFakeGW(t)
	gw.setBoard("cup", map[string]any{"title": "Spring Cup", "reset": "none"})
	tab := b.tab(t)
	tab.run(t, chromedp.EmulateViewport(1920, 1080))
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/?board=cup&overlay=1&rows=3&cols=avatar,flag,delta&accent=ff00aa"))
	testenv.Until(t, 10*time.Second, "the overlay's subscription", func() bool { return gw.subscribed("cup") == 1 })

	now := gw.now()
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "open", "starts_at": nil, "ends_at": now + 90_000, "final_at": now + 95_000})
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 1, "entries": cupEntries(av), "total": 40})
	tab.waitFor(t, 10*time.Second, "three rows with names, avatars and flags",
		`members() === "alice,li,emo" && text("#title") === "Spring Cup" &&
		 text('#rows tr[data-member="li"] .name') === "李小龍" &&
		 q('#rows tr[data-member="alice"] img').referrerPolicy === "no-referrer" &&
		 q('#rows tr[data-member="alice"] img').complete && q('#rows tr[data-member="alice"] img').naturalWidth > 0 &&
		 text('#rows tr[data-member="alice"] .flag') === "\u{1F1EB}\u{1F1F7}" &&
		 text('#rows tr[data-member="emo"] .initial') === "😀" && !q('#rows tr[data-member="emo"] img')`)
	tab.waitFor(t, 2*time.Second, "the countdown to the end", `/^ends in 1:(2\d|30)$/.test(text("#clock"))`)
	tab.waitFor(t, time.Second, "chromeless, transparent, themed, previewed over a checkerboard outside OBS",
		`getComputedStyle(document.body).backgroundColor === "rgba(0, 0, 0, 0)" && !q("header.bar") && !q("footer") &&
		 document.documentElement.classList.contains("preview") &&
		 getComputedStyle(document.documentElement).backgroundImage.startsWith("repeating-conic-gradient") &&
		 getComputedStyle(document.documentElement).getPropertyValue("--ov-accent").trim() === "#ff00aa" &&
		 parseFloat(getComputedStyle(q("#rows td.score")).fontSize) >= 28`)
	tab.waitFor(t, time.Second, "nothing wider than 1080p", `document.documentElement.scrollWidth <= 1920`)
	// Photographed over a dark scene: a screenshot of a transparent page is white.
	tab.js(t, `document.documentElement.classList.remove("preview"); document.documentElement.style.setProperty("--ov-bg", "#0b1220")`)
	tab.shot(t, out, "overlay-1-live")

	// An overtake: li passes alice; the rows glide (FLIP) and the delta shows.
	tab.js(t, recordAnimations)
	entries := cupEntries(av)
	entries[0], entries[1] = entry(1, "li", 3300, "李小龍", av+"/li.svg", "JP"), entry(2, "alice", 3200, "Alice", av+"/alice.svg", "FR")
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 2, "entries": entries, "total": 40})
	tab.waitFor(t, 5*time.Second, "the overtake, animated",
		`members() === "li,alice,emo" && text('#rows tr[data-member="li"] .delta') === "+200" &&
		 window.__anims.some((a) => a.member === "li" && a.kf.includes("translateY")) &&
		 window.__anims.some((a) => a.member === "alice" && a.kf.includes("translateY")) &&
		 text('#rows tr[data-member="li"] .move') === "▲"`)

	// Closing, then final: the countdown to the final standings, then the banner.
	now = gw.now()
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "closing", "starts_at": nil, "ends_at": now - 1000, "final_at": now + 4000})
	tab.waitFor(t, 5*time.Second, "the countdown to final", `/^final in 0:0[0-4]$/.test(text("#clock")) && attr("#conn", "data-state") === "closing"`)
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "final", "starts_at": nil, "ends_at": now - 1000, "final_at": now})
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 3, "entries": entries, "total": 40, "final": true})
	tab.waitFor(t, 5*time.Second, "the final banner",
		`!q("#final-banner").hidden && text("#final-text") === "Final standings" && attr("#conn", "data-state") === "final" &&
		 text("#clock") === "" && members() === "li,alice,emo"`)
	tab.shot(t, out, "overlay-2-final")
	tab.checkNoErrors(t)
}

func testOverlayReducedMotion(t *testing.T, b *browser) {
	gw := newFakeGW(t)
	tab := b.tab(t)
	if _, err := chromedp.Call(tab.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
	}); err != nil {
		t.Fatal(err)
	}
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=calm&rows=2"))
	testenv.Until(t, 10*time.Second, "the subscription", func() bool { return gw.subscribed("calm") == 1 })
	gw.push(map[string]any{"type": "top", "board": "calm", "seq": 1, "total": 2,
		"entries": []map[string]any{entry(1, "a", 2, "", "", ""), entry(2, "b", 1, "", "", "")}})
	tab.waitFor(t, 5*time.Second, "the first rows", `members() === "a,b"`)
	tab.js(t, recordAnimations)
	gw.push(map[string]any{"type": "top", "board": "calm", "seq": 2, "total": 2,
		"entries": []map[string]any{entry(1, "b", 3, "", "", ""), entry(2, "a", 2, "", "", "")}})
	tab.waitFor(t, 5*time.Second, "the new order, without moving rows",
		`members() === "b,a" && matchMedia("(prefers-reduced-motion: reduce)").matches &&
		 !window.__anims.some((a) => a.kf.includes("translate"))`)
	tab.checkNoErrors(t)
}

// A period ends on a board that goes on: the final standings stay up for
// hold seconds, then the next period's live rows take over.
func testOverlayRoundFinal(t *testing.T, b *browser) {
	gw := newFakeGW(t)
	gw.setBoard("round", map[string]any{"title": "Round", "reset": "1m", "tz": "UTC"})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=round&hold=1"))
	testenv.Until(t, 10*time.Second, "the subscription", func() bool { return gw.subscribed("round") == 1 })
	gw.push(map[string]any{"type": "board", "board": "round", "state": "open", "period": 7, "starts_at": nil, "ends_at": nil, "final_at": nil})
	tab.waitFor(t, 5*time.Second, "the round countdown from the reset", `/^round ends in 0:[0-5]\d$|^round ends in 1:00$/.test(text("#clock"))`)
	gw.push(map[string]any{"type": "top", "board": "round", "seq": 5, "period": 7, "final": true, "total": 1,
		"entries": []map[string]any{entry(1, "winner", 50, "Winner", "", "")}})
	gw.push(map[string]any{"type": "top", "board": "round", "seq": 6, "period": 8, "total": 1,
		"entries": []map[string]any{entry(1, "early", 1, "", "", "")}})
	tab.waitFor(t, 5*time.Second, "the round's final standings", `!q("#final-banner").hidden && text("#final-text").startsWith("Round over") && members() === "winner"`)
	tab.waitFor(t, 5*time.Second, "the next round after the hold", `q("#final-banner").hidden && members() === "early"`)
	tab.checkNoErrors(t)
}

func testSpectatorLifecycle(t *testing.T, b *browser, av, out string) {
	gw := newFakeGW(t)
	gw.setBoard("cup", map[string]any{"title": "Spring Cup", "reset": "none"})
	gw.setBoard("league", map[string]any{"title": "League", "reset": "weekly"})
	gw.refuse["secret"] = "forbidden"
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/?board=cup&follow=emo"))
	testenv.Until(t, 10*time.Second, "the subscription", func() bool { return gw.subscribed("cup") == 1 })
	now := gw.now()
	// Four days and more away: days and hours, not 112:39:43.
	far := now + (4*86400+16*3600+30*60)*1000
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "scheduled", "starts_at": far, "ends_at": far + 3_600_000, "final_at": far + 3_660_000})
	tab.waitFor(t, 5*time.Second, "a countdown of days", `text("#countdown") === "starts in 4 d 16 h"`)
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "scheduled", "starts_at": now + 30_000, "ends_at": now + 3_600_000, "final_at": now + 3_660_000})
	tab.waitFor(t, 5*time.Second, "title and the countdown to the start",
		`text("#title") === "Spring Cup" && document.title.startsWith("Spring Cup") && /^starts in 0:[23]\d$/.test(text("#countdown")) &&
		 attr("#conn", "data-state") === "scheduled" && text("#conn") === "not started"`)
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "open", "starts_at": now, "ends_at": now + 3_600_000, "final_at": now + 3_660_000})
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 1, "entries": cupEntries(av), "total": 3})
	big := fmt.Sprint(int64(9_007_199_254_740_991))
	gw.push(map[string]any{"type": "view", "board": "cup", "member": "emo", "rank": 3, "score": 9_007_199_254_740_991, "seq": 1,
		"around": []map[string]any{entry(2, "li", 3100, "李小龍", av+"/li.svg", "JP"), entry(3, "emo", 9_007_199_254_740_991, "😀 Emoji", "", "US")}})
	tab.waitFor(t, 5*time.Second, "live rows, the follow card, the countdown to the end",
		`members() === "alice,li,emo" && attr("#conn", "data-state") === "live" && /^ends in 1?:?\d\d:\d\d$|^ends in 1:00:00$/.test(text("#countdown")) &&
		 text("#view-rank") === "#3" && q("#ops").hidden`)
	_ = big
	// The biggest score fits its card on one line; a long id ends in an
	// ellipsis instead of widening the page.
	tab.waitFor(t, 2*time.Second, "the big score inside its card, on one line",
		`lines(q("#view-score")) === 1 && q("#view-score").scrollWidth <= q("#view-score").clientWidth + 1 &&
		 q("#view-score").getBoundingClientRect().right <= q("#view").getBoundingClientRect().right + 1`)
	tab.shot(t, out, "spectator-lifecycle-1-live")
	tab.run(t, chromedp.EmulateViewport(390, 844))
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 2, "total": 4, "entries": append(cupEntries(av),
		entry(4, "a_really_long_member_identifier_without_any_breaks_0123456789abcdef", 5, "Long Name That Goes On And On", "", ""))})
	tab.waitFor(t, 5*time.Second, "no horizontal overflow with a long id at phone width",
		`members().endsWith(",a_really_long_member_identifier_without_any_breaks_0123456789abcdef") && document.documentElement.scrollWidth <= window.innerWidth`)
	tab.shot(t, out, "spectator-lifecycle-phone")
	tab.run(t, chromedp.EmulateViewport(1280, 900))

	// The board ends: final banner and badge; then it is deleted.
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "final", "starts_at": now, "ends_at": now, "final_at": now})
	gw.push(map[string]any{"type": "top", "board": "cup", "seq": 3, "entries": cupEntries(av), "total": 3, "final": true})
	tab.waitFor(t, 5*time.Second, "final, its standings shown once",
		`!q("#final-banner").hidden && attr("#conn", "data-state") === "final" && text("#conn") === "final" && text("#countdown") === "" &&
		 members() === "alice,li,emo" && q("#last").hidden`)
	tab.shot(t, out, "spectator-lifecycle-2-final")
	gw.push(map[string]any{"type": "board", "board": "cup", "state": "deleted"})
	tab.waitFor(t, 5*time.Second, "deleted", `attr("#conn", "data-state") === "deleted" && text("#conn") === "board deleted" &&
		text("#notice") === "This board was deleted." && members() === "" && q("#final-banner").hidden`)

	// A board with a weekly reset shows it; one the token may not read says so.
	tab2 := b.tab(t)
	tab2.run(t, chromedp.Navigate(gw.srv.URL+"/?board=secret"))
	tab2.waitFor(t, 10*time.Second, "not allowed, not live", `attr("#conn", "data-state") === "forbidden" && text("#conn") === "not allowed" &&
		attr("#conn", "data-status") === "open" && text("#notice").includes("not allowed")`)
	tab2.run(t, chromedp.Navigate(gw.srv.URL+"/?board=league"))
	tab2.waitFor(t, 10*time.Second, "the reset", `text("#period") === "Resets weekly" && text("#title") === "League"`)
	tab.checkNoErrors(t)
	tab2.checkNoErrors(t)
}

func testPlayerAttempts(t *testing.T, b *browser) {
	gw := newFakeGW(t)
	gw.setBoard("trial", map[string]any{"title": "Time trial", "reset": "none", "max_submissions": 2})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/play?board=trial"))
	tab.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Mia"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "two attempts", `text("#attempts") === "2 attempts left" && text("#title") === "Time trial"`)
	for i, want := range []string{"1 attempt left", "0 attempts left"} {
		tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
		tab.waitFor(t, 5*time.Second, fmt.Sprintf("attempt %d", i+1), fmt.Sprintf(`text("#attempts") === %q`, want))
	}
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	tab.waitFor(t, 5*time.Second, "limit_reached explained, with the server's message",
		`text("#ackline").includes("no attempts left") && text("#ackline").includes("limit_reached") && text("#ackline").includes("2 per period (fake)")`)
	tab.checkNoErrors(t)
}

// testLongToken (R31): a token that expires in about two years. A refresh
// timer of exp − now − 60 s overflows the browser's 32-bit timer: Chromium
// keeps the delay modulo 2^32 as a signed number, so this TTL (15 × 2^32 ms
// plus 3e9 ms, like the 720h of docs/overlay.md) fires at once. With the
// fake answering each auth with as far an exp, that was a tight loop of
// auth requests. The page must send none.
func testLongToken(t *testing.T, b *browser) {
	gw := newFakeGW(t)
	gw.ttl = (15<<32 + 3_000_000_000) * time.Millisecond
	gw.setBoard("stream", map[string]any{"title": "Stream"})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=stream&rows=3"))
	testenv.Until(t, 10*time.Second, "the overlay's subscription", func() bool { return gw.subscribed("stream") == 1 })
	gw.push(map[string]any{"type": "top", "board": "stream", "seq": 1, "total": 1, "entries": []map[string]any{entry(1, "a", 5, "", "", "")}})
	tab.waitFor(t, 5*time.Second, "the rows", `members() === "a" && attr("#conn", "data-state") === "live"`)
	// A negative: watched for a few seconds, long past the moment an
	// overflowed timer fires (at once), in which the loop sent over a hundred.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n := gw.authCount(); n > 0 {
			t.Fatalf("%d auth requests for a token valid for two years", n)
		}
	}
	tab.waitFor(t, time.Second, "still live", `attr("#conn", "data-state") === "live"`)
	tab.checkNoErrors(t)
}

// testOverlayThemeColours (B7): a colour parameter is a colour or nothing.
// CSS.supports accepts anything holding var(), so `bg=var(--x,) url(…)` used
// to put an attacker's image behind the overlay.
func testOverlayThemeColours(t *testing.T, b *browser) {
	var hits atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>`)
	}))
	t.Cleanup(attacker.Close)
	gw := newFakeGW(t)
	tab := b.tab(t)
	img := url.QueryEscape("var(--x,) url(" + attacker.URL + "/pixel.svg)")
	tab.run(t, chromedp.Navigate(gw.srv.URL+"/overlay?board=th&bg="+img+"&row="+url.QueryEscape("rgb(1,2,3)")+
		"&fg=GOLD&accent=%230f0&muted=ff00aa80&font="+url.QueryEscape("x; background: url(/y)")))
	testenv.Until(t, 10*time.Second, "the subscription", func() bool { return gw.subscribed("th") == 1 })
	tab.waitFor(t, 5*time.Second, "hex and named colours taken, anything else ignored",
		`(() => { const cs = getComputedStyle(document.documentElement), st = document.documentElement.style;
		  return st.getPropertyValue("--ov-bg") === "" && st.getPropertyValue("--ov-row") === "" && st.getPropertyValue("--ov-font") === "" &&
		    st.getPropertyValue("--ov-fg") === "gold" && st.getPropertyValue("--ov-accent") === "#0f0" && st.getPropertyValue("--ov-muted") === "#ff00aa80" &&
		    !cs.backgroundImage.includes("url(") && !getComputedStyle(document.body).backgroundImage.includes("url(") &&
		    [...document.querySelectorAll("*")].every((e) => !getComputedStyle(e).backgroundImage.includes("url(")); })()`)
	if n := hits.Load(); n != 0 {
		t.Errorf("the attacker's server got %d requests", n)
	}
}

// testScoresOneLine: at 1280 and 1920 wide the player page's Top 10 keeps
// every score on one line (names give way with an ellipsis), and so does the
// big score of the spectator's follow card.
func testScoresOneLine(t *testing.T, b *browser, out string) {
	gw := newFakeGW(t)
	gw.setBoard("wide", map[string]any{"title": "Wide"})
	long := "Bartholomew Maximilian Featherstonehaugh-Wolfeschlegelsteinhausen"
	entries := []map[string]any{
		entry(1, "zed", 9_876_543_210, long, "", "FR"),
		entry(2, "amy", 123_456, "Amy", "", ""),
		entry(3, "a_really_long_member_identifier_without_any_breaks_0123456789", 24_000, "", "", "JP"),
		entry(4, "bo", 240, "Bo", "", ""),
		entry(5, "cy", 24, "Cy", "", ""),
	}
	for i, w := range []int64{1280, 1920} {
		tab := b.tab(t)
		tab.run(t, chromedp.EmulateViewport(w, 900))
		tab.run(t, chromedp.Navigate(gw.srv.URL+"/play?board=wide"))
		tab.run(t,
			chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
			chromedp.SendKeys(chromedp.CSS(`#name-input`), "Cy"),
			chromedp.Click(chromedp.CSS(`#join-btn`)),
		)
		testenv.Until(t, 10*time.Second, "the player's subscription", func() bool { return gw.subscribed("wide") == i+1 })
		gw.push(map[string]any{"type": "top", "board": "wide", "seq": 1, "total": 5, "entries": entries})
		tab.waitFor(t, 5*time.Second, fmt.Sprintf("every Top 10 score on one line at %d wide", w),
			`members("#top-rows").split(",").length === 5 &&
			 [...document.querySelectorAll("#top-rows td.score")].every((td) => lines(td) === 1 && td.scrollWidth <= td.clientWidth + 1) &&
			 [...document.querySelectorAll("#top-rows .name")].every((n) => lines(n) === 1) &&
			 getComputedStyle(q("#top-rows .name")).textOverflow === "ellipsis" &&
			 ["amy", "bo"].every((m) => { const n = q('#top-rows tr[data-member="' + m + '"] .name'); return n.scrollWidth <= n.clientWidth && n.clientWidth > 0; }) &&
			 q('#top-rows tr[data-member="zed"] .name').clientWidth >= 20 &&
			 document.documentElement.scrollWidth <= innerWidth`)
		tab.shot(t, out, fmt.Sprintf("player-top10-%d", w))
		tab.checkNoErrors(t)
	}
}
