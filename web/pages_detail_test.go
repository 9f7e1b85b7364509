package web

// Layouts at common desktop widths: what a person sees whole.

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testPlayerTopNames: the player page's Top 10 shows ordinary names whole
// (no ellipsis: the rendered text fits its box) beside scores of a dozen
// digits, at 1280 and 1920 px wide, the widths of most laptop and desktop
// screens, and at 900, where it goes under the player's card.
func testPlayerTopNames(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	names := []string{"Alexandra Johnson", "Bartholomew King", "Christopher Lee", "Dominique Martin", "Evangeline Stone",
		"Fitzgerald Brown", "Gwendolyn Parker", "Maximilian Weber", "Konstantin Ivanov", "Penelope Cruz-Diaz"}
	var prof map[string]any
	scores := map[string]int64{}
	for i, n := range names {
		m := fmt.Sprintf("wide-%d", i)
		gw.put(t, "/api/v1/members/"+m+"/profile", admin, map[string]any{"name": n, "country": "FR"}, &prof)
		scores[m] = 987654321000 - int64(i)*1111111
	}
	gw.score(t, admin, "widescreen", scores)

	tab := b.tab(t)
	for _, w := range []int64{1280, 1920, 900} {
		tab.run(t, chromedp.EmulateViewport(w, 900))
		tab.run(t, chromedp.Navigate(gw.url+"/play?board=widescreen"))
		tab.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
		tab.js(t, `document.querySelector("#name-input").value = ""`) // the name the page remembered
		tab.run(t,
			chromedp.SendKeys(chromedp.CSS(`#name-input`), "Zoe"),
			chromedp.Click(chromedp.CSS(`#join-btn`)),
		)
		tab.waitFor(t, 10*time.Second, fmt.Sprintf("the top 10 at %d px", w), `document.querySelectorAll("#top-rows tr").length === 10`)
		tab.waitFor(t, 5*time.Second, fmt.Sprintf("every name whole at %d px", w),
			`[...document.querySelectorAll("#top-rows .name")].every((n) => n.textContent.length > 10 && n.scrollWidth <= n.clientWidth + 1 && n.clientWidth > 0) &&
			 [...document.querySelectorAll("#top-rows td.score")].every((s) => s.scrollWidth <= s.clientWidth + 1)`)
		tab.shot(t, out, fmt.Sprintf("player-top-%d", w))
	}
	tab.checkNoErrors(t)
}

// testOverlayDeltaFades: with cols=delta, a row's last score change shows
// for a moment and fades; once it has faded, every row is whole again:
// each cell of each row is fully opaque (its background drawn) and every
// row ends at the same right edge, as before the change.
func testOverlayDeltaFades(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	gw.score(t, admin, "deltas", map[string]int64{"ann": 50, "ben": 40, "cat": 30})
	tab := b.tab(t)
	tab.run(t, chromedp.EmulateViewport(1280, 720))
	tab.run(t, chromedp.Navigate(gw.url+"/overlay?board=deltas&rows=3&cols=avatar,delta&bg=0b1220"))
	tab.waitFor(t, 10*time.Second, "three rows", `members() === "ann,ben,cat" && attr("#conn", "data-state") === "live"`)
	gw.score(t, admin, "deltas", map[string]int64{"ben": 25})
	tab.waitFor(t, 5*time.Second, "ben's delta shown", `members() === "ben,ann,cat" && text('#rows tr[data-member="ben"] td.delta') === "+25"`)
	// The fade runs for 5 s; finishing every animation shows its end state.
	tab.js(t, `document.getAnimations().forEach((a) => a.finish())`)
	tab.waitFor(t, 2*time.Second, "the delta faded, the rows whole",
		`(() => {
			const rows = [...document.querySelectorAll("#rows tr")];
			const cells = rows.flatMap((r) => [...r.children]);
			const rights = new Set(rows.map((r) => Math.round(r.lastElementChild.getBoundingClientRect().right)));
			const d = q('#rows tr[data-member="ben"] td.delta > *');
			return cells.every((c) => getComputedStyle(c).opacity === "1") && rights.size === 1 &&
				d !== null && getComputedStyle(d).opacity === "0";
		})()`)
	tab.shot(t, out, "overlay-delta-faded")
	tab.checkNoErrors(t)
}

// testPlayerStanding: the player page says where the player stands in
// words that mean something: the rank among a handful of players ("#8 of
// 8 players", never "Top 100%"), "Leading" at the top, and a percentage
// in the upper half of a larger board.
func testPlayerStanding(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	few := map[string]int64{}
	for i := range 7 {
		few[fmt.Sprintf("few-%d", i)] = int64(10 * (i + 1))
	}
	gw.score(t, admin, "small", few)
	many := map[string]int64{}
	for i := range 19 {
		many[fmt.Sprintf("many-%d", i)] = int64(10 * (i + 1))
	}
	gw.score(t, admin, "large", many)

	tab := b.tab(t)
	join := func(board string) {
		tab.run(t, chromedp.Navigate(gw.url+"/play?board="+board))
		tab.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
		tab.js(t, `document.querySelector("#name-input").value = ""`)
		tab.run(t, chromedp.SendKeys(chromedp.CSS(`#name-input`), "Ida"), chromedp.Click(chromedp.CSS(`#join-btn`)))
		tab.waitFor(t, 10*time.Second, "connected to "+board, `attr("#conn", "data-status") === "open"`)
	}
	join("small")
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="1"]`)))
	tab.waitFor(t, 5*time.Second, "last of eight", `text("#my-rank") === "#8" && text("#percentile") === "#8 of 8 players"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="100"]`)))
	tab.waitFor(t, 5*time.Second, "leading", `text("#my-rank") === "#1" && text("#percentile") === "Leading 8 players"`)

	join("large")
	tab.js(t, `document.querySelector("#custom-input").value = ""`)
	tab.run(t, chromedp.SendKeys(chromedp.CSS(`#custom-input`), "185\r"))
	tab.waitFor(t, 5*time.Second, "second of twenty", `text("#my-rank") === "#2" && text("#percentile") === "Top 10% of 20 players"`)
	tab.checkNoErrors(t)
}

// testPlayLinkToken: the spectator page's "Play on this board" link takes
// the page's token along only when it is a player's: a spectator's would
// be refused on the player page, which then asks for a player token.
func testPlayLinkToken(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	gw.score(t, admin, "linked", map[string]int64{"ann": 5})
	tab := b.tab(t)
	spectator, player := gw.token(t, "viewer-1", "spectator"), gw.token(t, "pia", "player")
	tab.run(t, chromedp.Navigate(gw.url+"/?board=linked#token="+spectator))
	tab.waitFor(t, 10*time.Second, "a play link without the spectator's token",
		`members() === "ann" && attr("#play-link", "href") === "/play?board=linked"`)
	tab.run(t, chromedp.Navigate("about:blank"), chromedp.Navigate(gw.url+"/?board=linked#token="+player))
	tab.waitFor(t, 10*time.Second, "a play link with the player's token",
		`members() === "ann" && attr("#play-link", "href") === "/play?board=linked#token=`+player+`"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`#play-link`)))
	tab.waitFor(t, 10*time.Second, "the player page as pia", `text("#you-name") === "pia" && attr("#conn", "data-status") === "open"`)
	tab.checkNoErrors(t)
}
