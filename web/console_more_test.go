package web

// The console's board states with their countdowns, a final board's
// frozen settings, and the webhooks with their last deliveries.

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// testConsoleLifecycle: the board list counts down to a board's next
// moment (its start, its end), and a final board's settings are shown
// frozen: every field and Save disabled, with a notice saying why.
func testConsoleLifecycle(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	now := time.Now().UTC()
	var stored map[string]any
	gw.put(t, "/api/v1/boards/soon", admin, map[string]any{"starts_at": now.Add(2 * time.Hour).Format(time.RFC3339)}, &stored)
	gw.put(t, "/api/v1/boards/running", admin, map[string]any{"ends_at": now.Add(30 * time.Minute).Format(time.RFC3339)}, &stored)
	gw.put(t, "/api/v1/boards/done", admin, map[string]any{"title": "Done", "starts_at": now.Add(-2 * time.Hour).Format(time.RFC3339),
		"ends_at": now.Add(-time.Hour).Format(time.RFC3339)}, &stored)

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.waitFor(t, 10*time.Second, "the countdowns in the board list",
		`/^not started · starts in 1:59:\d\d$/.test(text('tr[data-board="soon"] .state')) &&
		 /^live · ends in (29|30):\d\d$/.test(text('tr[data-board="running"] .state')) &&
		 text('tr[data-board="done"] .state') === "final"`)
	// They tick between two reads of the list.
	tab.js(t, `window.__first = document.querySelector('tr[data-board="running"] .state').textContent`)
	tab.waitFor(t, 3*time.Second, "the countdown ticking", `text('tr[data-board="running"] .state') !== window.__first`)

	tab.run(t, chromedp.Click(button("done")))
	tab.waitFor(t, 5*time.Second, "the final board's settings frozen",
		`q("#f-title").value === "Done" && !q("#final-lock").hidden && q("#f-title").disabled && q("#save").disabled &&
		 [...document.querySelectorAll("#edit-form input, #edit-form select")].every((c) => c.disabled)`)
	// Another board's settings are editable again.
	tab.run(t, chromedp.Click(button("running")))
	tab.waitFor(t, 5*time.Second, "a live board's settings editable", `q("#final-lock").hidden && !q("#f-title").disabled && !q("#save").disabled`)
	tab.checkNoErrors(t)
}

// testConsoleWebhooks: the console lists the webhooks with their events,
// boards and last deliveries: a ban tells member.banned to a receiver that
// refuses connections (a --dev gateway lets webhooks reach loopback), and
// the delivery shows pending, with its attempts and the last error.
func testConsoleWebhooks(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/webhooks/rewards", admin, map[string]any{"url": "http://127.0.0.1:9/hook", "secret": "0123456789abcdef0123",
		"events": []string{"member.banned"}, "boards": []string{"arena2"}}, &stored)
	gw.score(t, admin, "arena2", map[string]int64{"mallory": 5})

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.waitFor(t, 10*time.Second, "the webhook listed, no delivery yet",
		`!q("#webhooks-card").hidden && text('#webhooks li[data-webhook="rewards"] .hook-head').includes("http://127.0.0.1:9/hook") &&
		 text('#webhooks li[data-webhook="rewards"] .hook-head').includes("member.banned") &&
		 text('#webhooks li[data-webhook="rewards"] .hook-head').includes("boards: arena2") &&
		 text('#webhooks li[data-webhook="rewards"]').includes("No deliveries yet.")`)
	gw.put(t, "/api/v1/boards/arena2/bans/mallory", admin, map[string]any{"reason": "cheating"}, &stored)
	tab.waitFor(t, 15*time.Second, "the delivery, attempted and failed",
		`(() => { const r = q('#webhooks li[data-webhook="rewards"] tbody tr'); if (!r) return false;
		  const c = [...r.children].map((td) => td.textContent);
		  return c[0] === "member.banned" && c[1] === "arena2" && c[2] === "pending" && Number(c[3]) >= 1 && c[4] !== "" && c[5] !== ""; })()`)
	tab.checkNoErrors(t)
}
