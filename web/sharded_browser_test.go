package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testShardedPlayer: on a sharded board, whose acks carry no rank (R24
// v1.3, ack_rank none), the player page shows after a score the rank of
// its live view, following it, and never "null", "undefined" or "NaN".
func testShardedPlayer(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/wide", admin, map[string]any{"shards": 4}, &stored)
	gw.score(t, admin, "wide", map[string]int64{"zed": 50})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/play?board=wide"))
	tab.run(t, chromedp.WaitVisible(chromedp.CSS(`#name-input`)))
	tab.js(t, `document.querySelector("#name-input").value = ""`)
	tab.run(t,
		chromedp.SendKeys(chromedp.CSS(`#name-input`), "Shard"),
		chromedp.Click(chromedp.CSS(`#join-btn`)),
	)
	tab.waitFor(t, 10*time.Second, "connected", `attr("#conn", "data-status") === "open"`)
	clean := `!/null|undefined|NaN/.test(text("#ack-rank") + text("#ackline") + text("#my-rank"))`
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="10"]`)))
	tab.waitFor(t, 5*time.Second, "the ack without rank, the view's rank beside it",
		`text("#ack-score") === "10" && text("#ackline").includes("score 10") && text("#ack-rank") === "#2" && text("#my-rank") === "#2" && `+clean)
	tab.run(t, chromedp.Click(chromedp.CSS(`.pad button[data-delta="100"]`)))
	tab.waitFor(t, 5*time.Second, "the ack's rank follows the view",
		`text("#ack-score") === "110" && text("#ack-rank") === "#1" && text("#my-rank") === "#1" && `+clean)
	gw.score(t, admin, "wide", map[string]int64{"zed": 100})
	tab.waitFor(t, 5*time.Second, "overtaken: the last ack's rank with the view",
		`text("#ack-rank") === "#2" && text("#my-rank") === "#2" && `+clean)
	tab.shot(t, out, "player-sharded")
	tab.checkNoErrors(t)
}
