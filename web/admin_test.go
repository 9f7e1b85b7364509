package web

// The console (/admin) in Chromium, used as a person uses it: controls are
// found by their visible labels and button texts, never by id, and every
// outcome is checked on the page and on the gateway's REST API.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// labelled is the form control whose visible label reads text.
func labelled(text string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(
		`[...document.querySelectorAll("label")].find((l) => l.textContent.trim() === %q && l.offsetParent !== null)?.control`, text))
}

// button is the visible button that reads text.
func button(text string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(
		`[...document.querySelectorAll("button")].find((b) => b.textContent.trim() === %q && b.offsetParent !== null)`, text))
}

// control is the id of the control labelled label, found as a person
// finds it: by the label's text.
func (tb *tab) control(t *testing.T, label string) chromedp.ID {
	t.Helper()
	tb.run(t, chromedp.WaitVisible(labelled(label)))
	id, err := tb.eval(string(labelled(label)) + `?.id ?? ""`)
	if err != nil || id == "" {
		t.Fatalf("no control labelled %q: %v", label, err)
	}
	return chromedp.ID(id)
}

// fill replaces the value of the control labelled label by typing.
func (tb *tab) fill(t *testing.T, label, value string) {
	t.Helper()
	c := tb.control(t, label)
	tb.js(t, fmt.Sprintf(`document.getElementById(%q).select()`, string(c)))
	tb.run(t, chromedp.SendKeys(c, "\b"+value)) // the selection goes with a backspace
}

// choose picks value in the select labelled label.
func (tb *tab) choose(t *testing.T, label, value string) {
	t.Helper()
	c := tb.control(t, label)
	tb.run(t, chromedp.SetValue(c, value))
	tb.js(t, `document.getElementById(`+fmt.Sprintf("%q", string(c))+`).dispatchEvent(new Event("input", { bubbles: true }))`)
}

func (tb *tab) click(t *testing.T, text string) {
	t.Helper()
	tb.run(t, chromedp.WaitVisible(button(text)), chromedp.Click(button(text)))
}

// get reads a REST resource as JSON.
func (gw *gateway) get(t *testing.T, path, token string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gw.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, rb)
	}
	var out map[string]any
	if err := json.Unmarshal(rb, &out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, rb)
	}
	return out
}

// config is a board's stored config, read over REST.
func (gw *gateway) config(t *testing.T, board, token string) map[string]any {
	t.Helper()
	b, _ := gw.get(t, "/api/v1/boards/"+board, token)["board"].(map[string]any)
	return b
}

// sameBut fails when two configs differ in a field not named.
func sameBut(t *testing.T, what string, before, after map[string]any, fields ...string) {
	t.Helper()
	b, a := maps.Clone(before), maps.Clone(after)
	for _, f := range fields {
		delete(b, f)
		delete(a, f)
	}
	bj, _ := json.Marshal(b)
	aj, _ := json.Marshal(a)
	if string(bj) != string(aj) {
		t.Errorf("%s changed more than %v:\n before %s\n after  %s", what, fields, bj, aj)
	}
}

func TestConsole(t *testing.T) {
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

	t.Run("without a token", func(t *testing.T) { testConsoleNoToken(t, b, bin) })
	t.Run("create and edit a board", func(t *testing.T) { testConsoleBoards(t, b, gw) })
	t.Run("moderate a member", func(t *testing.T) { testConsoleModeration(t, b, gw, out) })
	t.Run("regions", func(t *testing.T) { testConsoleRegions(t, b, gw) })
	t.Run("states and a final board", func(t *testing.T) { testConsoleLifecycle(t, b, gw) })
	t.Run("webhooks", func(t *testing.T) { testConsoleWebhooks(t, b, gw) })
	t.Run("export a period", func(t *testing.T) { testConsoleExport(t, b, gw) })
	t.Run("the review queue", func(t *testing.T) { testConsoleQueue(t, b, gw, out) })
}

// testConsoleExport (§18): the export offers the current period and each
// retained one; each downloads as NDJSON or CSV, hidden entries only when
// asked for. What the page saves is read back from the Blob it hands the
// download link.
func testConsoleExport(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	var cfg map[string]any
	gw.put(t, "/api/v1/boards/weekly", admin, map[string]any{"reset": "daily", "retain": 3}, &cfg)
	gw.score(t, admin, "weekly", map[string]int64{"ann": 30, "bob": 20})
	req, err := http.NewRequest(http.MethodPost, gw.url+"/api/v1/boards/weekly/import?id=yesterday&period=previous",
		strings.NewReader(`{"member":"cid","delta":7}`+"\n"+`{"member":"dan","delta":9}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("import: %d", res.StatusCode)
	}
	var ban map[string]any
	gw.put(t, "/api/v1/boards/weekly/bans/bob", admin, map[string]any{"reason": "x"}, &ban)

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.run(t, chromedp.WaitVisible(button("weekly")), chromedp.Click(button("weekly")))
	tab.waitFor(t, 10*time.Second, "the period choice: current and three retained",
		`q("#export-period").options.length === 4 && q("#export-period").options[1].textContent.includes("previous")`)
	tab.js(t, `window.saved = []; const made = URL.createObjectURL;
		URL.createObjectURL = (blob) => { blob.text().then((s) => window.saved.push(s)); return made(blob); }`)
	tab.click(t, "Download NDJSON")
	tab.waitFor(t, 10*time.Second, "the current period saved", `window.saved.length === 1 && text("#export-done").includes("weekly-")`)
	if got, _ := tab.eval(`window.saved[0]`); got != `{"rank":1,"member":"ann","score":30,"name":null,"meta":null}`+"\n" {
		t.Fatalf("NDJSON of the current period: %q", got)
	}
	tab.run(t, chromedp.Click(labelled("Hidden entries too")))
	tab.click(t, "Download NDJSON")
	tab.waitFor(t, 10*time.Second, "with the hidden entry", `window.saved.length === 2 && window.saved[1].includes('"hidden":true')`)
	tab.js(t, `(`+string(labelled("Period"))+`).selectedIndex = 1`)
	tab.click(t, "Download CSV")
	tab.waitFor(t, 10*time.Second, "yesterday's CSV", `window.saved.length === 3`)
	if got, _ := tab.eval(`window.saved[2]`); got != "rank,member,score,name,meta\r\n1,dan,9,,\r\n2,cid,7,,\r\n" {
		t.Fatalf("CSV of the previous period: %q", got)
	}
	tab.checkNoErrors(t)
}

// labelledButton is the visible button whose accessible name (aria-label)
// is name.
func labelledButton(name string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(
		`[...document.querySelectorAll("button")].find((b) => b.getAttribute("aria-label") === %q && b.offsetParent !== null)`, name))
}

// testConsoleQueue (§16): members held by a board's jump flag are listed
// in the console's review queue with their reason, score and events; a
// spectator does not see them. Clear shows a member again (in the
// console's standings and the spectator's), Remove drops its entry, Ban
// with a reason bans it; each leaves the queue, and the gateway agrees.
func testConsoleQueue(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	var stored map[string]any
	gw.put(t, "/api/v1/boards/queue", admin, map[string]any{"flags": map[string]any{"jump": 50}}, &stored)
	gw.score(t, admin, "queue", map[string]int64{"ann": 40, "cheat": 100, "sneak": 90, "bot": 80})

	watch := b.tab(t)
	watch.run(t, chromedp.Navigate(gw.url+"/?board=queue"))
	watch.waitFor(t, 10*time.Second, "the spectator sees only ann", `members() === "ann"`)

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.run(t, chromedp.WaitVisible(button("queue")), chromedp.Click(button("queue")))
	const held = `[...document.querySelectorAll("#held li")].map((li) => li.dataset.member).join(",")`
	tab.waitFor(t, 10*time.Second, "the queue and the standings",
		held+` === "bot,cheat,sneak" && members() === "ann" && q("#held-empty").hidden`)
	tab.waitFor(t, time.Second, "cheat's row",
		`text('#held li[data-member="cheat"] .reason') === "jump" && text('#held li[data-member="cheat"] .score') === "100" && text('#held li[data-member="cheat"] .events').includes("bt-cheat-")`)
	tab.js(t, `document.activeElement.blur(); document.querySelector("#held-card").scrollIntoView()`)
	tab.shot(t, out, "console-queue")

	tab.run(t, chromedp.Click(labelledButton("Clear cheat")))
	tab.waitFor(t, 5*time.Second, "cheat shown again",
		held+` === "bot,sneak" && members() === "cheat,ann" && text("#held-done") === "cheat is shown again."`)
	watch.waitFor(t, 5*time.Second, "cheat back for spectators", `members() === "cheat,ann"`)

	tab.run(t, chromedp.Click(labelledButton("Remove sneak")))
	tab.waitFor(t, 5*time.Second, "sneak removed", held+` === "bot" && members() === "cheat,ann"`)

	tab.fill(t, "Ban reason for bot", "speed hack")
	tab.run(t, chromedp.Click(labelledButton("Ban bot")))
	tab.waitFor(t, 5*time.Second, "bot banned and off the queue",
		held+` === "" && !q("#held-empty").hidden && text("#bans").includes("bot") && text("#bans").includes("speed hack")`)

	if h := gw.get(t, "/api/v1/boards/queue/held", admin)["held"].([]any); len(h) != 0 {
		t.Fatalf("the gateway's queue after the three actions: %v", h)
	}
	if top := gw.get(t, "/api/v1/boards/queue/top", admin); top["total"] != float64(2) {
		t.Fatalf("standings after the actions: %v, want cheat and ann", top)
	}
	bans := gw.get(t, "/api/v1/boards/queue/bans", admin)["bans"].([]any)
	if len(bans) != 1 || bans[0].(map[string]any)["member"] != "bot" || bans[0].(map[string]any)["reason"] != "speed hack" {
		t.Fatalf("bans %v", bans)
	}
	tab.checkNoErrors(t)
	watch.checkNoErrors(t)
}

// testConsoleNoToken: on a gateway without --dev, the console opened
// without a token says how to get one and shows no controls.
func testConsoleNoToken(t *testing.T, b *browser, bin string) {
	gw := startGatewayEnv(t, bin, testenv.FreePort(t), []string{"LB_JWT_SECRET=console-test-secret-console-test-secret"})
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin"))
	tab.waitFor(t, 10*time.Second, "the hint", `!q("#notice").hidden && text("#notice").includes("#token=") &&
		text("#notice").includes("wsgateway token") && q("#boards-card").hidden && q("#board-card").hidden`)
	tab.checkNoErrors(t)
}

// testConsoleBoards: create a board, change its settings, see an invalid
// value refused next to its field with nothing changed, then rename it:
// only the title changes.
func testConsoleBoards(t *testing.T, b *browser, gw *gateway) {
	admin := gw.token(t, "ops", "admin")
	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.waitFor(t, 10*time.Second, "the boards table", `!q("#boards-card").hidden && attr("#conn", "data-status") === "open"`)
	// The token is read once and leaves the address bar and the tab's
	// history entry.
	tab.waitFor(t, time.Second, "the token gone from the URL", `!location.href.includes("token") && location.pathname === "/admin"`)

	tab.fill(t, "New board id", "finals")
	tab.fill(t, "New board title", "Finals")
	tab.click(t, "Create")
	tab.waitFor(t, 10*time.Second, "the new board listed and open",
		`text('tr[data-board="finals"] .title') === "Finals" && !q("#board-card").hidden && q("#f-title").value === "Finals"`)
	if got := gw.config(t, "finals", admin); got["title"] != "Finals" {
		t.Fatalf("created config %v", got)
	}
	// Create does not replace an existing board.
	tab.fill(t, "New board id", "finals")
	tab.click(t, "Create")
	tab.waitFor(t, 5*time.Second, "the refusal", `text("#create-err").includes("already exists")`)

	tab.fill(t, "Reset", "daily")
	tab.choose(t, "Mode", "best")
	tab.fill(t, "Max submissions", "3")
	tab.click(t, "Save")
	tab.waitFor(t, 5*time.Second, "saved", `text("#saved") === "Saved."`)
	set := gw.config(t, "finals", admin)
	if set["reset"] != "daily" || set["mode"] != "best" || set["max_submissions"] != float64(3) {
		t.Fatalf("settings not stored: %v", set)
	}

	// A value the server refuses: its message shows under that field.
	tab.fill(t, "Top", "500")
	tab.click(t, "Save")
	tab.waitFor(t, 5*time.Second, "the error next to Top", `text("#err-top").includes("top") && text("#err-top").includes("100") && text("#edit-err") === ""`)
	sameBut(t, "a refused save", set, gw.config(t, "finals", admin))

	// Rename: the page sends the title alone; reset, mode and limits stay.
	tab.fill(t, "Top", "10")
	tab.fill(t, "Title", "Grand finals")
	tab.click(t, "Save")
	tab.waitFor(t, 5*time.Second, "renamed in the list", `text("#saved") === "Saved." && text('tr[data-board="finals"] .title') === "Grand finals"`)
	renamed := gw.config(t, "finals", admin)
	if renamed["title"] != "Grand finals" {
		t.Fatalf("title %v", renamed["title"])
	}
	sameBut(t, "renaming", set, renamed, "title")
	tab.waitFor(t, time.Second, "the board in the URL, the token not", `location.hash === "#board=finals"`)

	// Phone width: the page does not scroll sideways (the boards table
	// scrolls inside its card).
	tab.run(t, chromedp.EmulateViewport(390, 844))
	tab.waitFor(t, 5*time.Second, "no horizontal overflow at phone width", `document.documentElement.scrollWidth <= window.innerWidth`)
	tab.checkNoErrors(t)
}

// testConsoleModeration: the standings show profiles; a member found by id
// is banned (with a reason) and vanishes from the standings, and is back
// when the ban is lifted; a profile edited shows in the standings; a member
// removed from the period is gone; a member erased is gone everywhere; a
// spectator watching shows as a viewer.
func testConsoleModeration(t *testing.T, b *browser, gw *gateway, out string) {
	admin := gw.token(t, "ops", "admin")
	gw.score(t, admin, "league", map[string]int64{"alice": 30, "bob": 20, "carol": 10})
	var prof map[string]any
	gw.put(t, "/api/v1/members/bob/profile", admin, map[string]any{"name": "Bobby", "country": "FR"}, &prof)

	watch := b.tab(t)
	watch.run(t, chromedp.Navigate(gw.url+"/?board=league"))
	watch.waitFor(t, 10*time.Second, "the spectator's table", `members() === "alice,bob,carol"`)

	tab := b.tab(t)
	tab.run(t, chromedp.Navigate(gw.url+"/admin#token="+admin))
	tab.run(t, chromedp.WaitVisible(button("league")), chromedp.Click(button("league")))
	tab.waitFor(t, 10*time.Second, "the standings with the profile",
		`members() === "alice,bob,carol" && text('#rows tr[data-member="bob"] .name') === "Bobby" && text('#rows tr[data-member="bob"] .id').includes("FR")`)
	tab.waitFor(t, 6*time.Second, "one viewer", `text('tr[data-board="league"] .viewers') === "1" && text('tr[data-board="league"] .members') === "3"`)

	tab.fill(t, "Member id", "bob")
	tab.click(t, "Find")
	tab.waitFor(t, 5*time.Second, "bob found", `text("#member-rank").includes("#2") && q("#profile-name").value === "Bobby" && text("#ban-state") === "Not banned on this board."`)
	tab.fill(t, "Reason", "cheating")
	tab.click(t, "Ban")
	tab.waitFor(t, 5*time.Second, "bob gone from the standings", `members() === "alice,carol" && text("#ban-state").includes("cheating") && text("#bans").includes("bob")`)
	watch.waitFor(t, 5*time.Second, "bob gone for spectators too", `members() === "alice,carol"`)
	bans := gw.get(t, "/api/v1/boards/league/bans", admin)["bans"].([]any)
	if len(bans) != 1 || bans[0].(map[string]any)["member"] != "bob" || bans[0].(map[string]any)["reason"] != "cheating" {
		t.Fatalf("bans %v", bans)
	}
	tab.js(t, `document.activeElement.blur(); window.scrollTo(0, 0)`)
	tab.shot(t, out, "console")

	tab.click(t, "Lift")
	tab.waitFor(t, 5*time.Second, "bob back", `members() === "alice,bob,carol" && text("#ban-state") === "Not banned on this board." && !q("#bans-empty").hidden`)
	if bans := gw.get(t, "/api/v1/boards/league/bans", admin)["bans"].([]any); len(bans) != 0 {
		t.Fatalf("bans after the lift: %v", bans)
	}

	// The profile edited from the console reaches the standings.
	tab.fill(t, "Name", "Bob the Great")
	tab.click(t, "Save profile")
	tab.waitFor(t, 5*time.Second, "the new name", `text('#rows tr[data-member="bob"] .name') === "Bob the Great"`)

	// Removed from the current period: the entry is gone, not hidden.
	tab.fill(t, "Member id", "carol")
	tab.click(t, "Find")
	tab.waitFor(t, 5*time.Second, "carol found", `text("#member-rank").includes("#3")`)
	tab.click(t, "Remove")
	tab.waitFor(t, 5*time.Second, "carol gone", `members() === "alice,bob" && text("#member-rank").includes("no visible entry")`)
	if total := gw.get(t, "/api/v1/boards/league/top", admin)["total"]; total != float64(2) {
		t.Fatalf("total %v after the removal, want 2", total)
	}

	// Erased everywhere, after a confirmation: gone from the standings,
	// for spectators too, and from the store (its export is empty).
	tab.fill(t, "Member id", "alice")
	tab.click(t, "Find")
	tab.waitFor(t, 5*time.Second, "alice found", `text("#member-rank").includes("#1")`)
	tab.click(t, "Erase")
	tab.waitFor(t, 5*time.Second, "the confirmation asked", `text("#member-done").includes("Confirm erase") && members() === "alice,bob"`)
	tab.click(t, "Confirm erase")
	tab.waitFor(t, 5*time.Second, "alice erased", `members() === "bob" && text("#member-done") === "alice is erased: 1 score on 1 board, 1 remembered event id."`)
	watch.waitFor(t, 5*time.Second, "alice gone for spectators too", `members() === "bob"`)
	if x := gw.get(t, "/api/v1/members/alice/export", admin); len(x["entries"].([]any)) != 0 {
		t.Fatalf("export after the erasure: %v", x)
	}
	tab.checkNoErrors(t)
	watch.checkNoErrors(t)
}
