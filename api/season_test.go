package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/api"
	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
	"github.com/wsgateway/wsgateway/rank/ranktest"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// exportLine is one NDJSON line of an export, every key required.
type exportLine struct {
	Rank   int64            `json:"rank"`
	Member string           `json:"member"`
	Score  json.Number      `json:"score"`
	Name   *string          `json:"name"`
	Meta   *json.RawMessage `json:"meta"`
	Hidden bool             `json:"hidden"`
}

// pageEntry is an entry of GET …/top as the export must repeat it.
type pageEntry struct {
	Rank   int64           `json:"rank"`
	Member string          `json:"member"`
	Score  json.Number     `json:"score"`
	Name   string          `json:"name"`
	Meta   json.RawMessage `json:"meta"`
}

// pages reads every entry of a board's period through GET …/top.
func (e *env) pages(board, period string) []pageEntry {
	e.t.Helper()
	var out []pageEntry
	for off := 0; ; off += 100 {
		var pg struct {
			Entries []pageEntry `json:"entries"`
			Total   int         `json:"total"`
		}
		e.do("GET", fmt.Sprintf("/api/v1/boards/%s/top?offset=%d&limit=100&period=%s", board, off, period), adminToken(e.t), "").json(e.t, &pg)
		out = append(out, pg.Entries...)
		if off+100 >= pg.Total {
			return out
		}
	}
}

// export reads an export as NDJSON lines, each decoded strictly.
func (e *env) export(board, query string) []exportLine {
	e.t.Helper()
	r := e.do("GET", "/api/v1/boards/"+board+"/export?"+query, adminToken(e.t), "")
	r.wantStatus(e.t, 200)
	if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
		e.t.Fatalf("export Content-Type %q", ct)
	}
	var out []exportLine
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			e.t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"rank", "member", "score", "name", "meta"} {
			if _, ok := raw[k]; !ok {
				e.t.Fatalf("export line %q has no %s", sc.Text(), k)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		var l exportLine
		if err := dec.Decode(&l); err != nil {
			e.t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// sameAsPages wants export lines equal to the board's pages.
func sameAsPages(t *testing.T, what string, got []exportLine, want []pageEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, pages hold %d", what, len(got), len(want))
	}
	for i, l := range got {
		w := want[i]
		name := ""
		if l.Name != nil {
			name = *l.Name
		}
		meta := ""
		if l.Meta != nil {
			meta = string(*l.Meta)
		}
		if l.Rank != w.Rank || l.Member != w.Member || l.Score != w.Score || name != w.Name || meta != string(w.Meta) || l.Hidden {
			t.Fatalf("%s: line %d %+v (name %q meta %s), page entry %+v", what, i+1, l, name, meta, w)
		}
	}
}

// TestExport: §18's export over real sockets on both engines: NDJSON and
// CSV list the period as its pages do (ranks, ties, names from profiles,
// meta), over many chunks; hidden entries only with hidden=true, marked
// and ranked as if shown; admin only; bad queries are 400.
func TestExport(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := decorated(t, eng.new(t))
		e.putBoard("ex", `{"tiebreak":"shared"}`)
		adm := adminToken(t)
		for from := 0; from < 4500; from += 1000 { // more than two of the export's chunks
			var sb strings.Builder
			for i := from; i < from+1000 && i < 4500; i++ {
				if i > from {
					sb.WriteByte(',')
				}
				meta := ""
				if i%5 == 0 {
					meta = fmt.Sprintf(`,"meta":{"i":%d,"q":"a,\"b\"\nc"}`, i)
				}
				fmt.Fprintf(&sb, `{"id":"e%d","member":"m%04d","delta":%d%s}`, i, i, i%37, meta)
			}
			for _, a := range e.scores("ex", "["+sb.String()+"]") {
				if a.Error != nil {
					t.Fatalf("score: %+v", a.Error)
				}
			}
		}
		e.do("PUT", "/api/v1/members/m0001/profile", adm, `{"name":"Ann, \"the\" first"}`).wantStatus(t, 200)
		want := e.pages("ex", "")
		if len(want) != 4500 {
			t.Fatalf("pages hold %d entries", len(want))
		}
		sameAsPages(t, "ndjson", e.export("ex", ""), want)
		sameAsPages(t, "ndjson asked by name", e.export("ex", "format=ndjson&hidden=false"), want)

		// CSV: the header, then the same rows, RFC 4180 quoting.
		r := e.do("GET", "/api/v1/boards/ex/export?format=csv", adm, "")
		r.wantStatus(t, 200)
		if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" || !strings.Contains(r.header.Get("Content-Disposition"), `filename="ex.csv"`) {
			t.Fatalf("CSV headers %v", r.header)
		}
		rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
		if err != nil {
			t.Fatalf("CSV: %v", err)
		}
		if strings.Join(rows[0], ",") != "rank,member,score,name,meta" || len(rows) != len(want)+1 {
			t.Fatalf("CSV header %v, %d rows", rows[0], len(rows))
		}
		for i, row := range rows[1:] {
			w := want[i]
			if row[0] != strconv.FormatInt(w.Rank, 10) || row[1] != w.Member || row[2] != string(w.Score) || row[3] != w.Name || row[4] != string(w.Meta) {
				t.Fatalf("CSV row %d %q, page entry %+v", i+1, row, w)
			}
		}
		if !bytes.Contains(r.body, []byte("\r\n")) {
			t.Fatal("CSV lines do not end in CRLF (RFC 4180)")
		}

		// Hidden entries: out unless asked for, then marked and ranked
		// as if shown.
		before := e.pages("ex", "")
		for _, m := range []string{before[0].Member, before[10].Member} {
			e.do("PUT", "/api/v1/boards/ex/bans/"+m, adm, `{"reason":"x"}`).wantStatus(t, 200)
		}
		sameAsPages(t, "with two banned", e.export("ex", ""), e.pages("ex", ""))
		got := e.export("ex", "hidden=true")
		if len(got) != len(before) {
			t.Fatalf("hidden=true: %d lines, %d entries before the bans", len(got), len(before))
		}
		for i, l := range got {
			if l.Rank != before[i].Rank || l.Member != before[i].Member || l.Hidden != (i == 0 || i == 10) {
				t.Fatalf("hidden=true line %d: %+v, before the bans %+v", i+1, l, before[i])
			}
		}

		// Who may, and bad queries.
		for _, tok := range []string{serverToken(t), token(t, "p", auth.Player, nil), token(t, "s", auth.Spectator, nil)} {
			e.do("GET", "/api/v1/boards/ex/export", tok, "").wantError(t, 403, "forbidden")
		}
		e.do("GET", "/api/v1/boards/ex/export", "", "").wantError(t, 401, "unauthorized")
		e.do("GET", "/api/v1/boards/ex/export", token(t, "a", auth.Admin, []string{"other"}), "").wantError(t, 403, "forbidden")
		e.do("GET", "/api/v1/boards/ex/export?format=xml", adm, "").wantError(t, 400, "bad_request")
		e.do("GET", "/api/v1/boards/ex/export?hidden=yes", adm, "").wantError(t, 400, "bad_request")
		e.do("GET", "/api/v1/boards/ex/export?period=previous", adm, "").wantError(t, 400, "bad_request")
		e.do("GET", "/api/v1/boards/nope/export", adm, "").wantError(t, 404, "unknown_board")
	})
}

// TestExportKinds: sharded, hot (decimals) and cohort boards export their
// global standings as their pages show them.
func TestExportKinds(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		for board, cfg := range map[string]string{
			"sh":  `{"shards":4}`,
			"hot": `{"decay":{"bucket":"1h","buckets":3,"factor":0.5}}`,
			"co":  `{"cohort":{"size":3}}`,
		} {
			e.putBoard(board, cfg)
			var sb strings.Builder
			for i := range 300 {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"id":"e%d","member":"m%03d","delta":%d}`, i, i%120, i%11)
			}
			e.do("POST", "/api/v1/boards/"+board+"/scores", serverToken(t), "["+sb.String()+"]").wantStatus(t, 200)
			sameAsPages(t, board, e.export(board, ""), e.pages(board, ""))
		}
		if l := e.export("hot", ""); !strings.Contains(string(l[0].Score), ".") {
			t.Fatalf("a hot board's score %s, want decimals", l[0].Score)
		}
	})
}

// decorated is an env whose reads show profile names (R20), as the node's
// are.
func decorated(t *testing.T, store rank.Store) *env {
	return newEnv(t, store, func(c *setup) { c.Decorator = storeDecorator{store} })
}

// importResult is the answer of an import.
type importResult struct {
	Applied   int64 `json:"applied"`
	Duplicate int64 `json:"duplicate"`
	Failed    int64 `json:"failed"`
	Errors    []struct {
		Line    int64  `json:"line"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// importBody posts an import with an admin token.
func (e *env) importBody(board, query, body string) resp {
	e.t.Helper()
	req := newRequest(e.t, e, "POST", "/api/v1/boards/"+board+"/import?"+query, body)
	req.Header.Set("Authorization", "Bearer "+adminToken(e.t))
	req.Header.Set("Content-Type", "application/x-ndjson")
	return e.send(req)
}

func (e *env) importOK(board, query, body string) importResult {
	e.t.Helper()
	r := e.importBody(board, query, body)
	r.wantStatus(e.t, 200)
	var out importResult
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		e.t.Fatalf("import answer %s: %v", r.body, err)
	}
	return out
}

// TestImport: each line is the event "<id>:<line>" applied in line order;
// a bad line fails alone with its line, code and message; names go to
// profiles that have none; a re-run changes nothing (R38).
func TestImport(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := decorated(t, eng.new(t))
		e.putBoard("im", "")
		adm := adminToken(t)
		e.do("PUT", "/api/v1/members/named/profile", adm, `{"name":"Kept"}`).wantStatus(t, 200)
		body := strings.Join([]string{
			`{"member":"a","delta":5,"name":"Alice"}`,   // 1
			`{"member":"b","delta":5}`,                  // 2: ties a, reached later
			`not json`,                                  // 3
			``,                                          // 4: blank, skipped
			`{"member":"a","value":3}`,                  // 5: value on incr
			`{"member":"bad id","delta":1}`,             // 6
			`{"member":"c","delta":1.5}`,                // 7
			`{"member":"c","delta":2,"extra":1}`,        // 8
			`{"member":"c","delta":2,"meta":{"lvl":4}}`, // 9
			`{"member":"named","delta":1,"name":"New"}`, // 10
			`{"member":"d","delta":1,"name":"\u0000x"}`, // 11
			`{"member":"a","delta":-1}`,                 // 12
			`{"member":"e","delta":9007199254740991}`,   // 13
			`{"member":"e","delta":1}`,                  // 14: out of range
			`{"member":"f","delta":1,"name":"Eff"}`,     // 15, no newline after
		}, "\n")
		got := e.importOK("im", "id=season1", body)
		if got.Applied != 7 || got.Duplicate != 0 || got.Failed != 7 {
			t.Fatalf("import: %+v", got)
		}
		wantErrs := []struct {
			line int64
			code string
		}{{3, "bad_request"}, {5, "bad_request"}, {6, "invalid_member"}, {7, "invalid_score"}, {8, "bad_request"}, {11, "bad_request"}, {14, "out_of_range"}}
		if len(got.Errors) != len(wantErrs) {
			t.Fatalf("errors %+v", got.Errors)
		}
		for i, w := range wantErrs {
			if g := got.Errors[i]; g.Line != w.line || g.Code != w.code || g.Message == "" {
				t.Fatalf("error %d: %+v, want line %d code %s", i, g, w.line, w.code)
			}
		}
		want := []pageEntry{
			{Rank: 1, Member: "e", Score: "9007199254740991"},
			{Rank: 2, Member: "b", Score: "5"},
			{Rank: 3, Member: "a", Score: "4", Name: "Alice"},
			{Rank: 4, Member: "c", Score: "2", Meta: json.RawMessage(`{"lvl":4}`)},
			{Rank: 5, Member: "named", Score: "1", Name: "Kept"},
			{Rank: 6, Member: "f", Score: "1", Name: "Eff"},
		}
		got2 := e.pages("im", "")
		if fmt.Sprint(got2) != fmt.Sprint(want) {
			t.Fatalf("board after the import:\n%v\nwant\n%v", got2, want)
		}
		var p struct {
			Name string `json:"name"`
		}
		e.do("GET", "/api/v1/members/a/profile", adm, "").json(t, &p)
		if p.Name != "Alice" {
			t.Fatalf("a's profile name %q, want Alice (it had none)", p.Name)
		}
		// The same import again: nothing applied twice.
		again := e.importOK("im", "id=season1", body)
		if again.Applied != 0 || again.Duplicate != 7 || again.Failed != 7 {
			t.Fatalf("re-run: %+v", again)
		}
		if got3 := e.pages("im", ""); fmt.Sprint(got3) != fmt.Sprint(want) {
			t.Fatalf("board after the re-run:\n%v\nwant\n%v", got3, want)
		}
		// A changed line under the same id is a conflict, not a silent re-apply.
		conflict := e.importOK("im", "id=season1", `{"member":"a","delta":6}`)
		if conflict.Failed != 1 || conflict.Errors[0].Code != "idempotency_conflict" {
			t.Fatalf("a changed line under the same id: %+v", conflict)
		}
		// Another id is another import.
		if other := e.importOK("im", "id=season2", `{"member":"z","delta":1}`); other.Applied != 1 {
			t.Fatalf("another id: %+v", other)
		}
	})
}

// TestImportLimits: the body streams past the API's body limit up to
// MaxImport; a declared length past it is refused before anything is
// read, a chunked body past it is cut there (413); at most 100 errors are
// listed, the first by line; refusals of the request: id, role, board.
func TestImportLimits(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		const body, limit = 64 << 10, 256 << 10
		e := newEnv(t, eng.new(t), func(c *setup) { c.MaxBody, c.MaxImport = body, limit })
		e.putBoard("lim", `{"mode":"best"}`)
		var sb strings.Builder
		n := 0
		for sb.Len() < 3*body { // past MaxBody, within MaxImport
			if n%20 == 19 {
				sb.WriteString("{oops\n")
			} else {
				fmt.Fprintf(&sb, `{"member":"m%d","value":%d}`+"\n", n%2000, n)
			}
			n++
		}
		got := e.importOK("lim", "id=big", sb.String())
		bad := int64(n / 20)
		if bad <= 100 || got.Applied != int64(n)-bad || got.Failed != bad || len(got.Errors) != 100 || got.Errors[0].Line != 20 {
			t.Fatalf("an import of %d lines, %d bad: %+v (errors %d)", n, bad, got, len(got.Errors))
		}

		// Past the limit: a declared length is refused before the body is
		// read; a chunked body is cut at the limit, the lines before it
		// applied (a re-run with the same id finishes nothing twice).
		small := newEnv(t, eng.new(t), func(c *setup) { c.MaxImport = 4 << 10 })
		small.putBoard("lim", `{"mode":"best"}`)
		var over strings.Builder
		for i := 0; over.Len() < 6<<10; i++ {
			fmt.Fprintf(&over, `{"member":"c%d","value":1}`+"\n", i)
		}
		small.importBody("lim", "id=declared", over.String()).wantError(t, 413, "bad_request")
		if pg := small.pages("lim", ""); len(pg) != 0 {
			t.Fatalf("a refused import applied %d lines", len(pg))
		}
		req := newRequest(t, small, "POST", "/api/v1/boards/lim/import?id=chunked", "")
		req.Body = io.NopCloser(strings.NewReader(over.String()))
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+adminToken(t))
		r := small.send(req)
		r.wantError(t, 413, "bad_request")
		if n := len(small.pages("lim", "")); n == 0 || !strings.Contains(string(r.body), fmt.Sprintf("(%d lines applied before", n)) {
			t.Fatalf("413 of a chunked import: %s, %d lines on the board", r.body, n)
		}

		e.importBody("lim", "", `{"member":"a","value":1}`).wantError(t, 400, "bad_request")
		e.importBody("lim", "id="+strings.Repeat("x", api.MaxImportID+1), `{"member":"a","value":1}`).wantError(t, 400, "bad_request")
		e.importBody("lim", "id=a/b", `{"member":"a","value":1}`).wantError(t, 400, "bad_request")
		e.importBody("none", "id=x", `{"member":"a","value":1}`).wantError(t, 404, "unknown_board")
		e.importBody("lim", "id=x&period=previous", `{"member":"a","value":1}`).wantError(t, 400, "bad_request")
		for _, tok := range []string{serverToken(t), token(t, "p", auth.Player, nil)} {
			req := newRequest(t, e, "POST", "/api/v1/boards/lim/import?id=x", `{"member":"a","value":1}`)
			req.Header.Set("Authorization", "Bearer "+tok)
			e.send(req).wantError(t, 403, "forbidden")
		}
		e.putBoard("src", "")
		e.putBoard("der", `{"source":{"kind":"union","boards":["src"]},"group":"src"}`)
		e.importBody("der", "id=x", `{"member":"a","delta":1}`).wantError(t, 409, "read_only")
	})
}

// TestImportAfterWindow: R38 past the idempotency window. A re-run of an
// import after its records expired (the store clock moved on by more than
// the board's window) applies nothing twice: the lines the first run
// settled are duplicates; a new id still applies.
func TestImportAfterWindow(t *testing.T) {
	t.Parallel()
	for _, eng := range []struct {
		name string
		new  func(t *testing.T, now func() time.Time) rank.Store
	}{
		{"memory", func(t *testing.T, now func() time.Time) rank.Store {
			s, err := memstore.New(rank.Hooks{}, memstore.Config{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"redis", func(t *testing.T, now func() time.Time) rank.Store {
			srv := testenv.StartRedis(t)
			client, err := redisstore.NewClient(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			s, err := redisstore.New(context.Background(), client, rank.Hooks{}, redisstore.Config{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			clk := ranktest.NewClock(time.Now())
			e := newEnv(t, eng.new(t, clk.Now))
			e.putBoard("late", `{"idempotency_window":"1s"}`)
			body := `{"member":"a","delta":5}` + "\n" + `{"member":"b","delta":3}` + "\n" + `oops` + "\n"
			if got := e.importOK("late", "id=once", body); got.Applied != 2 || got.Failed != 1 {
				t.Fatalf("first run: %+v", got)
			}
			clk.Advance(time.Hour)
			if got := e.importOK("late", "id=once", body); got.Applied != 0 || got.Duplicate != 2 || got.Failed != 1 {
				t.Fatalf("a re-run an hour later: %+v", got)
			}
			if pg := e.pages("late", ""); fmt.Sprint(pg) != fmt.Sprint([]pageEntry{{Rank: 1, Member: "a", Score: "5"}, {Rank: 2, Member: "b", Score: "3"}}) {
				t.Fatalf("board after the late re-run: %v", pg)
			}
			if got := e.importOK("late", "id=twice", body); got.Applied != 2 {
				t.Fatalf("another id: %+v", got)
			}
		})
	}
}

// TestImportPastPeriod: period=previous writes the past period (§18), the
// current one untouched; a board that keeps no past period, or a period
// it no longer retains, is a 400.
func TestImportPastPeriod(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("past", `{"reset":"daily","retain":2}`)
		if got := e.importOK("past", "id=yesterday&period=previous", `{"member":"a","delta":4}`+"\n"+`{"member":"b","delta":9}`); got.Applied != 2 {
			t.Fatalf("import into the previous period: %+v", got)
		}
		if pg := e.pages("past", "previous"); fmt.Sprint(pg) != fmt.Sprint([]pageEntry{{Rank: 1, Member: "b", Score: "9"}, {Rank: 2, Member: "a", Score: "4"}}) {
			t.Fatalf("the previous period: %v", pg)
		}
		if pg := e.pages("past", ""); len(pg) != 0 {
			t.Fatalf("the current period took the import: %v", pg)
		}
		e.importBody("past", "id=x&period=20000101", `{"member":"a","delta":1}`).wantError(t, 400, "bad_request")
		e.putBoard("flat", "")
		e.importBody("flat", "id=x&period=previous", `{"member":"a","delta":1}`).wantError(t, 400, "bad_request")
	})
}

// TestScoresCapped: a REST scores array on a capped board answers the
// capped event with capped and applied, and the next with limit_reached.
func TestScoresCapped(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("cap", `{"cap":{"points":10,"per":"period"}}`)
		r := e.do("POST", "/api/v1/boards/cap/scores", serverToken(t), `[{"id":"1","member":"a","delta":8},{"id":"2","member":"a","delta":8},{"id":"3","member":"a","delta":8}]`)
		r.wantStatus(t, 200)
		var got []struct {
			Score   int64 `json:"score"`
			Capped  bool  `json:"capped"`
			Applied int64 `json:"applied"`
			Error   *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		r.json(t, &got)
		if len(got) != 3 || got[0].Capped || got[0].Score != 8 || !got[1].Capped || got[1].Applied != 2 || got[1].Score != 10 ||
			got[2].Error == nil || got[2].Error.Code != "limit_reached" {
			t.Fatalf("scores on a capped board: %s", r.body)
		}
		e.do("PUT", "/api/v1/boards/bestcap", adminToken(t), `{"mode":"best","cap":{"points":10,"per":"day"}}`).wantError(t, 400, "bad_request")
	})
}

// TestImportFeeds: imported lines take the ordinary apply path (§18), so
// the store's change stream (live frames, webhooks, other nodes) hears of
// each applied line in line order and a derived board follows the
// imported one; a re-run is heard of no more.
func TestImportFeeds(t *testing.T) {
	t.Parallel()
	for _, eng := range []struct {
		name string
		new  func(t *testing.T, h rank.Hooks) rank.Store
	}{
		{"memory", func(t *testing.T, h rank.Hooks) rank.Store {
			s, err := memstore.New(h, memstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"redis", func(t *testing.T, h rank.Hooks) rank.Store {
			client, err := redisstore.NewClient(testenv.StartRedis(t).URL())
			if err != nil {
				t.Fatal(err)
			}
			s, err := redisstore.New(context.Background(), client, h, redisstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var heard []rank.Change
			e := newEnv(t, eng.new(t, rank.Hooks{Sink: func(batch []rank.Change) {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range batch {
					if c.Board == "src" {
						heard = append(heard, c)
					}
				}
			}}))
			e.putBoard("src", "")
			e.putBoard("der", `{"source":{"kind":"union","boards":["src"]},"group":"src"}`)
			body := `{"member":"b","delta":9}` + "\n" + `{"member":"a","delta":4}` + "\n" + `oops` + "\n" + `{"member":"b","delta":1}`
			if got := e.importOK("src", "id=feed", body); got.Applied != 3 || got.Failed != 1 {
				t.Fatalf("import: %+v", got)
			}
			want := fmt.Sprint([]pageEntry{{Rank: 1, Member: "b", Score: "10"}, {Rank: 2, Member: "a", Score: "4"}})
			if pg := e.pages("der", ""); fmt.Sprint(pg) != want {
				t.Fatalf("the derived board after the import: %v, want %s", pg, want)
			}
			if got := e.importOK("src", "id=feed", body); got.Duplicate != 3 {
				t.Fatalf("re-run: %+v", got)
			}
			mu.Lock()
			defer mu.Unlock()
			var seen []string
			for i, c := range heard {
				if i > 0 && c.Seq <= heard[i-1].Seq {
					t.Fatalf("changes out of order: %+v after %+v", c, heard[i-1])
				}
				seen = append(seen, fmt.Sprintf("%s=%d", c.Member, c.New))
			}
			if fmt.Sprint(seen) != "[b=9 a=4 b=10]" {
				t.Fatalf("the change stream heard %v, want [b=9 a=4 b=10] (each applied line once, in line order)", seen)
			}
		})
	}
}
