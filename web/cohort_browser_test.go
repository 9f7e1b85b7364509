package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testCohorts (§12, docs/leagues.md): on a league board of groups of two,
// a player sees its group's standings (not the board's) and its tier, both
// live, and again when it comes back; the spectator page and the overlay
// show one cohort by ?cohort=.
func testCohorts(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/groups", admin, map[string]any{
		"reset": "daily", "cohort": map[string]any{"size": 2},
		"league": map[string]any{"tiers": []string{"bronze", "silver"}, "promote": 1, "demote": 1},
	}, &stored)
	// One per request: cohorts fill in order of arrival.
	for _, m := range []struct {
		member string
		delta  int64
	}{{"alice", 30}, {"bob", 20}, {"carol", 10}} {
		gw.score(t, admin, "groups", map[string]int64{m.member: m.delta})
	}

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=groups"))
	tab.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	tab.js(t, `document.querySelector("#name-input").value = ""`) // not the name an earlier test left
	tab.run(t,
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Dan"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	// dan joins carol in bronze-2; on the whole board he would be #4.
	tab.waitFor(t, 5*time.Second, "the group's rank in the ack", `text("#ack-rank") === "#2"`)
	tab.waitFor(t, 5*time.Second, "your group and tier",
		`text("#top-h") === "Your group · bronze-2" && members("#top-rows") === "carol,dan" &&
		 !q("#group-tier").hidden && text("#group-tier") === "bronze tier" && text("#my-rank") === "#2"`)
	gw.score(t, admin, "groups", map[string]int64{"erin": 50}) // bronze-3: not dan's group
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	tab.waitFor(t, 5*time.Second, "the group's standings follow", `members("#top-rows") === "dan,carol" && text("#my-rank") === "#1"`)
	tab.shot(t, out, "player-group")
	tab.checkNoErrors(t)

	// Back later in the period: the group and tier come from a member
	// read, before any score.
	again := b.tab(t)
	again.run(t, chromedp.Navigate(gw.url+"/play?board=groups"))
	again.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	again.waitFor(t, time.Second, "the remembered name", `q("#name-input").value === "Dan"`)
	again.run(t, chromedp.Click(chromedp.CSS(`#join-btn`)))
	again.waitFor(t, 10*time.Second, "your group and tier without a score",
		`text("#top-h") === "Your group · bronze-2" && members("#top-rows") === "dan,carol" && text("#group-tier") === "bronze tier" && text("#my-rank") === "#1"`)
	again.checkNoErrors(t)

	spec := b.tab(t)
	spec.run(t, chromedp.Navigate(gw.url+"/?board=groups&cohort=bronze-1"))
	spec.waitFor(t, 10*time.Second, "one cohort on the spectator page",
		`members() === "alice,bob" && text("#total") === "2" && text("#top-h") === "Group bronze-1"`)
	gw.score(t, admin, "groups", map[string]int64{"bob": 15})
	spec.waitFor(t, 5*time.Second, "the cohort's frames follow", `members() === "bob,alice"`)
	spec.checkNoErrors(t)

	ov := b.tab(t)
	ov.run(t, chromedp.Navigate(gw.url+"/overlay?board=groups&cohort=bronze-2"))
	ov.waitFor(t, 10*time.Second, "one cohort on the overlay",
		`members() === "dan,carol" && text("#title") === "groups · Group bronze-2"`)
	ov.checkNoErrors(t)
}
