package api_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/rank"
)

// profileEnv is an API with the store's profiles and a listener that
// records what the API reports.
type profileEnv struct {
	*env
	mu      sync.Mutex // guards changed
	changed []string
}

func (p *profileEnv) ProfileChanged(member string) {
	p.mu.Lock()
	p.changed = append(p.changed, member)
	p.mu.Unlock()
}

func (p *profileEnv) changes() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.changed, ",")
}

func newProfileEnv(t *testing.T, store rank.Store, opts ...option) *profileEnv {
	t.Helper()
	ps, ok := store.(rank.Profiles)
	if !ok {
		t.Fatalf("%T has no profiles", store)
	}
	pe := &profileEnv{}
	opts = append([]option{func(c *setup) { c.Profiles, c.ProfileChanges = ps, pe }}, opts...)
	pe.env = newEnv(t, store, opts...)
	return pe
}

const profPath = "/api/v1/members/ann/profile"

// TestProfiles: PUT (server, admin) replaces and answers the profile, GET
// (any valid token) reads it, DELETE (admin) is a 204, then GET and DELETE
// are 404; the listener hears of every change and of nothing else.
func TestProfiles(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newProfileEnv(t, eng.new(t))
		player := token(t, "ann", auth.Player, nil)
		spect := token(t, "watch", auth.Spectator, []string{"some-board"})

		e.do("GET", profPath, player, "").wantError(t, 404, "not_found")
		full := `{"name":"Ann Élise","avatar":"https://img.example/ann.png","country":"FR"}`
		r := e.do("PUT", profPath, serverToken(t), full)
		r.wantStatus(t, 200)
		var got rank.Profile
		r.json(t, &got)
		want := rank.Profile{Name: "Ann Élise", Avatar: "https://img.example/ann.png", Country: "FR"}
		if got != want {
			t.Fatalf("PUT answered %+v, want %+v", got, want)
		}
		for _, tok := range []string{player, spect, serverToken(t), adminToken(t)} {
			r := e.do("GET", profPath, tok, "")
			r.wantStatus(t, 200)
			var g rank.Profile
			r.json(t, &g)
			if g != want {
				t.Fatalf("GET = %+v, want %+v", g, want)
			}
		}
		// A PUT replaces: avatar and name are gone.
		r = e.do("PUT", profPath, adminToken(t), `{"country":"JP"}`)
		r.wantStatus(t, 200)
		if strings.TrimSpace(string(r.body)) != `{"country":"JP"}` {
			t.Fatalf("PUT answered %s", r.body)
		}
		if r := e.do("GET", profPath, player, ""); strings.TrimSpace(string(r.body)) != `{"country":"JP"}` {
			t.Fatalf("GET after replace: %d %s", r.status, r.body)
		}
		e.do("DELETE", profPath, adminToken(t), "").wantStatus(t, 204)
		e.do("GET", profPath, player, "").wantError(t, 404, "not_found")
		e.do("DELETE", profPath, adminToken(t), "").wantError(t, 404, "not_found")
		if c := e.changes(); c != "ann,ann,ann" {
			t.Fatalf("listener heard %q, want ann three times (put, put, delete)", c)
		}
	})
}

// TestProfileRoles: a player's or a spectator's write is forbidden (its
// own profile included), only admin deletes, a missing token is a 401;
// a refused request changes nothing and tells nobody.
func TestProfileRoles(t *testing.T) {
	t.Parallel()
	e := newProfileEnv(t, memEngine().new(t))
	e.do("PUT", profPath, serverToken(t), `{"name":"Ann"}`).wantStatus(t, 200)
	for _, c := range []struct {
		method, tok string
		status      int
		code        string
	}{
		{"PUT", token(t, "ann", auth.Player, nil), 403, "forbidden"},
		{"PUT", token(t, "bob", auth.Player, nil), 403, "forbidden"},
		{"PUT", token(t, "ann", auth.Spectator, nil), 403, "forbidden"},
		{"DELETE", token(t, "ann", auth.Player, nil), 403, "forbidden"},
		{"DELETE", token(t, "x", auth.Spectator, nil), 403, "forbidden"},
		{"DELETE", serverToken(t), 403, "forbidden"},
		{"PUT", "", 401, "unauthorized"},
		{"GET", "", 401, "unauthorized"},
		{"DELETE", "", 401, "unauthorized"},
		{"GET", "not.a.token", 401, "unauthorized"},
	} {
		e.do(c.method, profPath, c.tok, `{"name":"Mallory"}`).wantError(t, c.status, c.code)
	}
	r := e.do("GET", profPath, token(t, "bob", auth.Player, nil), "")
	if strings.TrimSpace(string(r.body)) != `{"name":"Ann"}` {
		t.Fatalf("after refused requests: %d %s", r.status, r.body)
	}
	if c := e.changes(); c != "ann" {
		t.Fatalf("listener heard %q, want only the first PUT", c)
	}
}

// TestProfileBadFields: every malformed field is a 400 naming it, the
// stored profile is unchanged and nobody is told; a bad member id is
// invalid_member.
func TestProfileBadFields(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newProfileEnv(t, eng.new(t))
		adm := adminToken(t)
		e.do("PUT", profPath, adm, `{"name":"Ann","country":"SE"}`).wantStatus(t, 200)
		cases := []struct{ body, field string }{
			{`{"name":""}`, "name"},
			{`{"name":"` + strings.Repeat("n", 33) + `"}`, "name"},
			{`{"name":"Ann\u0007"}`, "name"},
			{`{"name":"Ann\u200b"}`, "name"},
			{`{"name":"\u202eAnn"}`, "name"},
			{`{"name":"\u0410lice"}`, "name"},                     // Cyrillic А: renders as Alice (UTS #39)
			{`{"name":"\uff21\uff4c\uff49\uff43\uff45"}`, "name"}, // fullwidth Ａｌｉｃｅ
			{`{"name":" Ann"}`, "name"},
			{`{"name":7}`, "name"},
			{`{"name":null}`, "name"},
			{`{"name":"A","name":"B"}`, "name"},
			{`{"avatar":"http://img.example/a.png"}`, "avatar"},
			{`{"avatar":"javascript:alert(1)"}`, "avatar"},
			{`{"avatar":"data:image/png;base64,AAAA"}`, "avatar"},
			{`{"avatar":"https://img.example/` + strings.Repeat("a", 240) + `"}`, "avatar"},
			{`{"avatar":"https://img.example/a\"onerror=\"x"}`, "avatar"},
			{`{"avatar":"https://user:pw@img.example/a.png"}`, "avatar"},
			{`{"avatar":""}`, "avatar"},
			{`{"country":"fr"}`, "country"},
			{`{"country":"XX"}`, "country"},
			{`{"country":"UK"}`, "country"},
			{`{"country":"FRA"}`, "country"},
			{`{"country":1}`, "country"},
			{`{"nickname":"x"}`, "nickname"},
			{`{"Name":"x"}`, "Name"},
		}
		for _, c := range cases {
			eb := e.do("PUT", profPath, adm, c.body).wantError(t, 400, "bad_request")
			if !strings.Contains(eb.Error.Message, "field "+c.field) {
				t.Errorf("%s: message %q does not name field %s", c.body, eb.Error.Message, c.field)
			}
		}
		for _, body := range []string{``, `{}`, `[]`, `{"name":"A"`, `{"name":"A"} {"name":"B"}`} {
			e.do("PUT", profPath, adm, body).wantError(t, 400, "bad_request")
		}
		for _, m := range []string{"a%20b", "a%7Bb%7D", strings.Repeat("m", 65)} {
			for _, method := range []string{"PUT", "GET", "DELETE"} {
				e.do(method, "/api/v1/members/"+m+"/profile", adm, `{"name":"X"}`).wantError(t, 400, "invalid_member")
			}
		}
		r := e.do("GET", profPath, adm, "")
		if strings.TrimSpace(string(r.body)) != `{"name":"Ann","country":"SE"}` {
			t.Fatalf("after bad requests: %d %s", r.status, r.body)
		}
		if c := e.changes(); c != "ann" {
			t.Fatalf("listener heard %q, want only the first PUT", c)
		}
	})
}

// storeDecorator decorates straight from the store, for checking that the
// API decorates every entry of its reads (the node's cached decorator is
// tested in node).
type storeDecorator struct{ ps rank.Profiles }

func (d storeDecorator) Decorate(ctx context.Context, lists ...[]rank.Entry) {
	for _, es := range lists {
		for i := range es {
			if got, err := d.ps.Profiles(ctx, []string{es[i].Member}); err == nil {
				if p, ok := got[es[i].Member]; ok {
					p.Decorate(&es[i])
				}
			}
		}
	}
}

// TestProfileDecoratesReads: R20 over REST: top and member reads carry the
// profile's name, avatar and country, and the token's name for a member
// without a profile.
func TestProfileDecoratesReads(t *testing.T) {
	t.Parallel()
	store := memEngine().new(t)
	e := newProfileEnv(t, store, func(c *setup) { c.Decorator = storeDecorator{store.(rank.Profiles)} })
	e.putBoard("deco", "")
	if _, err := rank.ApplyWait(t.Context(), store, rank.Event{Board: "deco", ID: "1", Member: "ann", Name: "ann-token", Op: rank.OpDelta, Amount: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := rank.ApplyWait(t.Context(), store, rank.Event{Board: "deco", ID: "2", Member: "bob", Name: "Bob Token", Op: rank.OpDelta, Amount: 3}); err != nil {
		t.Fatal(err)
	}
	e.do("PUT", profPath, serverToken(t), `{"name":"Ann","avatar":"https://img.example/a.png","country":"FR"}`).wantStatus(t, 200)
	want := `[{"rank":1,"member":"ann","score":5,"name":"Ann","avatar":"https://img.example/a.png","country":"FR"},{"rank":2,"member":"bob","score":3,"name":"Bob Token"}]`
	r := e.do("GET", "/api/v1/boards/deco/top", serverToken(t), "")
	if !strings.Contains(string(r.body), `"entries":`+want) {
		t.Fatalf("top: %s\nwant entries %s", r.body, want)
	}
	r = e.do("GET", "/api/v1/boards/deco/members/bob?around=1", serverToken(t), "")
	if !strings.Contains(string(r.body), `"around":`+want) {
		t.Fatalf("member: %s\nwant around %s", r.body, want)
	}
}
