package api_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/rank"
)

type hostsResolver map[string][]netip.Addr

func (h hostsResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return h[host], nil
}

var hosts = hostsResolver{
	"hooks.example":  {netip.MustParseAddr("93.184.216.34")},
	"inside.example": {netip.MustParseAddr("10.0.0.7")},
}

// TestWebhooks: admin CRUD (§13); the secret is never answered; bad
// bodies and private targets are 400 naming the field and store nothing;
// a missing webhook is not_found.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		store := eng.new(t)
		e := newEnv(t, store, func(c *setup) { c.Resolver = hosts })
		adm := adminToken(t)
		const p = "/api/v1/webhooks/w1"
		good := `{"url":"https://hooks.example/lb","secret":"0123456789abcdef","events":["period.final","board.final"],"boards":["b1"]}`

		e.do("GET", p, adm, "").wantError(t, 404, "not_found")
		e.do("DELETE", p, adm, "").wantError(t, 404, "not_found")
		e.do("GET", p+"/deliveries", adm, "").wantError(t, 404, "not_found")
		for body, field := range map[string]string{
			`{"url":"http://127.0.0.1:9/x","secret":"0123456789abcdef","events":["board.final"]}`:           "url",
			`{"url":"https://inside.example/x","secret":"0123456789abcdef","events":["board.final"]}`:       "url",
			`{"url":"http://169.254.169.254/","secret":"0123456789abcdef","events":["board.final"]}`:        "url",
			`{"url":"http://[64:ff9b::a9fe:a9fe]/","secret":"0123456789abcdef","events":["board.final"]}`:   "url",
			`{"url":"http://[2002:a00:1::1]/","secret":"0123456789abcdef","events":["board.final"]}`:        "url",
			`{"url":"http://198.18.0.1/","secret":"0123456789abcdef","events":["board.final"]}`:             "url",
			`{"url":"file:///etc/passwd","secret":"0123456789abcdef","events":["board.final"]}`:             "url",
			`{"url":"https://hooks.example/lb","secret":"fifteen-bytes!!","events":["board.final"]}`:        "secret",
			`{"url":"https://hooks.example/lb","secret":"0123456789abcdef","events":["member.erased!"]}`:    "events",
			`{"url":"https://hooks.example/lb","secret":"0123456789abcdef","events":["board.final"],"x":1}`: "x",
		} {
			eb := e.do("PUT", p, adm, body).wantError(t, 400, "bad_request")
			if !strings.Contains(eb.Error.Message, field) {
				t.Errorf("%s: message %q does not name %s", body, eb.Error.Message, field)
			}
		}
		if ws, _ := store.Webhooks(context.Background()); len(ws) != 0 {
			t.Fatalf("refused PUTs stored %+v", ws)
		}

		for _, tok := range []string{serverToken(t), token(t, "p", auth.Player, nil), token(t, "boss", auth.Admin, []string{"b1"})} {
			e.do("PUT", p, tok, good).wantError(t, 403, "forbidden")
			e.do("GET", "/api/v1/webhooks", tok, "").wantError(t, 403, "forbidden")
		}

		r := e.do("PUT", p, adm, good)
		r.wantStatus(t, 200)
		if strings.Contains(string(r.body), "0123456789abcdef") || strings.Contains(string(r.body), "secret") {
			t.Fatalf("PUT answered the secret: %s", r.body)
		}
		var got rank.Webhook
		r.json(t, &got)
		if got.ID != "w1" || got.URL != "https://hooks.example/lb" || len(got.Events) != 2 || len(got.Boards) != 1 {
			t.Fatalf("PUT answered %+v", got)
		}
		for _, path := range []string{p, "/api/v1/webhooks"} {
			r := e.do("GET", path, adm, "")
			r.wantStatus(t, 200)
			if strings.Contains(string(r.body), "secret") || !strings.Contains(string(r.body), `"id":"w1"`) {
				t.Fatalf("GET %s: %s", path, r.body)
			}
		}
		if w, _ := store.GetWebhook(context.Background(), "w1"); w.Secret != "0123456789abcdef" {
			t.Fatalf("stored secret %q", w.Secret)
		}

		// A delivery appears in the log with the contract's fields.
		if _, err := store.AppendOutbox(context.Background(), "m1", 0, rank.OutboxEvent{Event: rank.EventBoardFinal, Board: "b1", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		r = e.do("GET", p+"/deliveries", adm, "")
		r.wantStatus(t, 200)
		var log struct {
			Deliveries []map[string]any `json:"deliveries"`
		}
		r.json(t, &log)
		if len(log.Deliveries) != 1 {
			t.Fatalf("deliveries %s", r.body)
		}
		d := log.Deliveries[0]
		for _, k := range []string{"id", "event", "board", "status", "attempts", "last_error", "next_attempt_at"} {
			if _, ok := d[k]; !ok {
				t.Fatalf("delivery %s lacks %s", r.body, k)
			}
		}
		if d["status"] != "pending" || d["event"] != "board.final" || d["board"] != "b1" {
			t.Fatalf("delivery %s", r.body)
		}

		e.do("DELETE", p, adm, "").wantStatus(t, 204)
		e.do("GET", p, adm, "").wantError(t, 404, "not_found")
	})
}

// TestWebhookAllowPrivate: with the flag a loopback receiver is accepted.
func TestWebhookAllowPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memEngine().new(t), func(c *setup) { c.WebhookAllowPrivate = true })
	e.do("PUT", "/api/v1/webhooks/local", adminToken(t),
		`{"url":"http://127.0.0.1:9000/hook","secret":"0123456789abcdef","events":["board.state"]}`).wantStatus(t, 200)
}

// TestMemberBannedWebhook: a ban tells the webhooks that want
// member.banned, once, with the member.
func TestMemberBannedWebhook(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		store := eng.new(t)
		e := newEnv(t, store, func(c *setup) { c.WebhookAllowPrivate = true })
		adm := adminToken(t)
		e.putBoard("b1", `{}`)
		e.do("PUT", "/api/v1/webhooks/bans", adm, `{"url":"http://127.0.0.1:9/","secret":"0123456789abcdef","events":["member.banned"]}`).wantStatus(t, 200)
		e.do("PUT", "/api/v1/boards/b1/bans/cheater", adm, `{"reason":"aimbot"}`).wantStatus(t, 200)
		ds, err := store.Deliveries(context.Background(), "bans")
		if err != nil || len(ds) != 1 || ds[0].Event != rank.EventMemberBanned || ds[0].Board != "b1" || string(ds[0].Data) != `{"member":"cheater"}` {
			t.Fatalf("deliveries %+v, %v", ds, err)
		}
	})
}
