package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testRegions (§17, docs/regions.md): on a region board the player page
// shows the rank in the member's region beside the global rank: from its
// acks, again when someone of its region passes it, and from a member read
// when it comes back before scoring.
func testRegions(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/world", admin, map[string]any{"title": "World cup", "regions": true}, &stored)
	for m, c := range map[string]string{"alice": "DE", "bob": "DE", "carol": "FR", "dan": "DE", "erin": "DE"} {
		gw.put(t, "/api/v1/members/"+m+"/profile", admin, map[string]string{"country": c}, &stored)
	}
	gw.score(t, admin, "world", map[string]int64{"alice": 30, "bob": 20, "carol": 50})

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=world"))
	tab.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	tab.js(t, `document.querySelector("#name-input").value = ""`) // not the name an earlier test left
	tab.run(t,
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Dan"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	// dan: 4th of the board, 3rd of Germany.
	tab.waitFor(t, 5*time.Second, "the region rank beside the global one",
		`text("#my-rank") === "#4" && text("#my-region") === "#3 in DE" && !q("#my-region").hidden`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="100"]`)))
	tab.waitFor(t, 5*time.Second, "first everywhere", `text("#my-rank") === "#1" && text("#my-region") === "#1 in DE"`)
	tab.shot(t, out, "player-region")
	// erin (DE) passes dan: his view frame moves, and the region rank with it.
	gw.score(t, admin, "world", map[string]int64{"erin": 500})
	tab.waitFor(t, 5*time.Second, "passed in the region", `text("#my-rank") === "#2" && text("#my-region") === "#2 in DE"`)
	// carol (FR) passes dan too: second in Germany still.
	gw.score(t, admin, "world", map[string]int64{"carol": 100})
	tab.waitFor(t, 5*time.Second, "passed on the board only", `text("#my-rank") === "#3"`)
	tab.waitFor(t, 3*time.Second, "the region rank unchanged", `text("#my-region") === "#2 in DE"`)
	tab.checkNoErrors(t)

	// Back later: the region rank comes from a member read, before any score.
	again := b.tab(t)
	again.run(t, chromedp.Navigate(gw.url+"/play?board=world"))
	again.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	again.waitFor(t, time.Second, "the remembered name", `q("#name-input").value === "Dan"`)
	again.run(t, chromedp.Click(chromedp.CSS(`#join-btn`)))
	again.waitFor(t, 10*time.Second, "the region rank without a score", `text("#my-region") === "#2 in DE" && text("#my-rank") === "#3"`)
	again.checkNoErrors(t)

	// A board without regions shows none.
	plain := b.tab(t)
	plain.run(t, chromedp.Navigate(gw.url+"/play?board=world-plain"))
	plain.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	plain.run(t, chromedp.Click(chromedp.CSS(`#join-btn`)))
	plain.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	plain.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	plain.waitFor(t, 5*time.Second, "a global rank only", `text("#my-rank") === "#1" && q("#my-region").hidden`)
	plain.checkNoErrors(t)

	// The spectator page and the overlay show one region by ?region=, live.
	spec := b.tab(t)
	spec.run(t, chromedp.Navigate(gw.url+"/?board=world&region=DE"))
	spec.waitFor(t, 10*time.Second, "one region on the spectator page",
		`members() === "erin,dan,alice,bob" && text("#total") === "4" && text("#top-h") === "Region DE" && text("#cohort") === "DE"`)
	gw.score(t, admin, "world", map[string]int64{"bob": 1000})
	spec.waitFor(t, 5*time.Second, "the region's frames follow", `members() === "bob,erin,dan,alice"`)
	spec.shot(t, out, "spectator-region")
	spec.checkNoErrors(t)

	ov := b.tab(t)
	ov.run(t, chromedp.Navigate(gw.url+"/overlay?board=world&region=FR"))
	ov.waitFor(t, 10*time.Second, "one region on the overlay", `members() === "carol" && text("#title") === "World cup · FR"`)
	gw.score(t, admin, "world", map[string]int64{"fred": 7}) // no profile: ZZ, not FR
	gw.put(t, "/api/v1/members/gus/profile", admin, map[string]string{"country": "FR"}, &stored)
	gw.score(t, admin, "world", map[string]int64{"gus": 200})
	ov.waitFor(t, 5*time.Second, "the overlay's region follows", `members() === "gus,carol"`)
	ov.checkNoErrors(t)
}

// testConsoleRegions: the console lists a region board's regions, most
// members first, each linking to its spectator page, follows a move, and
// says a found member's region rank; a board without regions shows none.
func testConsoleRegions(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/nations", admin, map[string]any{"regions": true}, &stored)
	gw.put(t, "/api/v1/boards/no-nations", admin, map[string]any{}, &stored)
	for m, c := range map[string]string{"ana": "BR", "ben": "BR", "cho": "KR"} {
		gw.put(t, "/api/v1/members/"+m+"/profile", admin, map[string]string{"country": c}, &stored)
	}
	gw.score(t, admin, "nations", map[string]int64{"ana": 3, "ben": 2, "cho": 5, "dee": 1})

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin+"&board=nations"))
	tab.waitFor(t, 10*time.Second, "the regions listed",
		`!q("#regions-box").hidden && [...document.querySelectorAll("#regions li")].map((li) => li.dataset.region + ":" + li.querySelector(".muted").textContent).join(",") === "BR:2 members,KR:1 member,ZZ:1 member" &&
		 q('#regions li[data-region="KR"] a').getAttribute("href") === "/?board=nations&region=KR" && text("#fixed").includes("regions")`)
	gw.put(t, "/api/v1/members/ben/profile", admin, map[string]string{"country": "KR"}, &stored)
	gw.score(t, admin, "nations", map[string]int64{"ben": 1})
	tab.waitFor(t, 5*time.Second, "the move", `[...document.querySelectorAll("#regions li")].map((li) => li.dataset.region).join(",") === "KR,BR,ZZ"`)
	tab.fill(t, "Member id", "ben")
	tab.click(t, "Find")
	tab.waitFor(t, 5*time.Second, "the member's region rank", `text("#member-rank") === "ben is #3 with 3, #2 in KR."`)
	tab.checkNoErrors(t)

	plain := b.tab(t)
	plain.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin+"&board=no-nations"))
	plain.waitFor(t, 10*time.Second, "no regions", `!q("#board-card").hidden && q("#regions-box").hidden && !text("#fixed").includes("regions")`)
	plain.checkNoErrors(t)
}
