package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testReplayLinks (docs/lists.md): the spectator page shows a "Replay" link
// on an entry whose meta has an https replay URL, and no link for any
// other scheme (javascript:, http:), a URL with user info (a link to
// evil.example dressed as youtube.com) or a replay that is not a URL.
func testReplayLinks(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	replays := map[string]string{
		"ann": "https://replays.example/ann-81",
		"bob": "javascript:alert(document.domain)",
		"cat": "http://replays.example/cat",
		"dan": "not a url",
		"eve": "https://youtube.com@evil.example/watch",
		"fay": "https://:pw@evil.example/watch",
	}
	var events []map[string]any
	for i, m := range []string{"ann", "bob", "cat", "dan", "eve", "fay"} {
		events = append(events, map[string]any{
			"id": fmt.Sprintf("rp-%s-%d", m, time.Now().UnixNano()), "member": m, "delta": 60 - 10*i,
			"meta": map[string]any{"replay": replays[m]},
		})
	}
	var results []map[string]any
	gw.post(t, "/api/v1/boards/replays/scores", admin, events, &results)
	for i, r := range results {
		if _, failed := r["error"]; failed {
			t.Fatalf("score %v: %v", events[i], r)
		}
	}

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/?board=replays"))
	tab.waitFor(t, 10*time.Second, "the board's entries", `members() === "ann,bob,cat,dan,eve,fay"`)
	tab.waitFor(t, 5*time.Second, "ann's replay link",
		`text('#rows tr[data-member="ann"] td.replay') === "Replay" && q('#rows tr[data-member="ann"] td.replay a').href === "`+replays["ann"]+`"`)
	for _, m := range []string{"bob", "cat", "dan", "eve", "fay"} {
		tab.waitFor(t, time.Second, m+" without a link", `text('#rows tr[data-member="`+m+`"] td.replay') === "" && !q('#rows tr[data-member="`+m+`"] td.replay a')`)
	}
	tab.waitFor(t, time.Second, "no javascript: link anywhere", `![...document.querySelectorAll("a")].some(a => a.protocol === "javascript:" || a.hostname === "evil.example")`)

	// A new run with a replay: the link follows the live frame.
	gw.post(t, "/api/v1/boards/replays/scores", admin, []map[string]any{{
		"id": fmt.Sprint("rp-dan-", time.Now().UnixNano()), "member": "dan", "delta": 100,
		"meta": map[string]any{"replay": "https://replays.example/dan-2"},
	}}, &results)
	tab.waitFor(t, 5*time.Second, "dan's new run and its link",
		`members() === "dan,ann,bob,cat,eve,fay" && text('#rows tr[data-member="dan"] td.replay') === "Replay"`)
	tab.shot(t, out, "spectator-5-replays")
	tab.checkNoErrors(t)
}

// testLastRuns (docs/lists.md): on a board with history the player page
// lists "Your last runs", newest first, and adds each new run.
func testLastRuns(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/runs", admin, map[string]any{"history": 3}, &stored)
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=runs"))
	tab.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Runa"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	tab.waitFor(t, 5*time.Second, "an empty list of runs", `!q("#runs").hidden && text("#runs-h") === "Your last runs" && !q("#runs-empty").hidden`)
	// Each press waits for its ack and its view frame: the first view
	// shows the percentile above the pad, and a press aimed before that
	// shift lands beside the button.
	total := 0
	for _, d := range []int{10, 100, 1, 10} {
		total += d
		tab.run(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`.pad button[data-delta="%d"]`, d))))
		tab.waitFor(t, 5*time.Second, fmt.Sprintf("the ack and the view of +%d", d),
			fmt.Sprintf(`text("#pending") === "all acknowledged" && text("#ack-score") === "%d" && text("#my-score") === "%d"`, total, total))
	}
	// history: 3 keeps the last three, newest first.
	want := []string{"+10 → 121", "+1 → 111", "+100 → 110"}
	tab.waitFor(t, 5*time.Second, "the last three runs, newest first",
		`[...document.querySelectorAll("#runs-list li")].map(li => li.textContent.split(" · ")[0]).join("|") === "`+strings.Join(want, "|")+`" && q("#runs-empty").hidden`)
	tab.shot(t, out, "player-3-last-runs")
	tab.checkNoErrors(t)

	// A board without history shows no list.
	other := b.tab(t)
	other.run(t, chromedp.Navigate(gw.url+"/play?board=nohistory"))
	other.run(t,
		chromedp.WaitVisible(chromedp.CSS(`#name-input`)),
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Runa"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	other.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	other.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="1"]`)))
	other.waitFor(t, 5*time.Second, "acknowledged, no runs list", `text("#pending") === "all acknowledged" && q("#runs").hidden`)
}
