package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/gwtest"
	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/node"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// TestRegions (§17, R37) through a whole node, whose profile cache gives
// each event its member's country: score results carry the region and the
// rank there; a country set by the server moves the member with its next
// event; GET …/regions lists, GET …/regions/{region}/top pages and member
// reads name the region, while the board's own reads stay as without
// regions; the config rules and bad regions answer 400, and a player may
// not set a country (403).
func TestRegions(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{"memory", "redis"} {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			opts := gwtest.Options{Secret: testSecret}
			if eng == "redis" {
				rc, err := redisstore.NewClient(testenv.StartRedis(t).URL())
				if err != nil {
					t.Fatal(err)
				}
				opts.Config = func(c *node.Config) { c.Redis = rc }
			}
			testRegions(t, gwtest.Run(t, opts))
		})
	}
}

func testRegions(t *testing.T, g *gwtest.Gateway) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin, server := adminToken(t), serverToken(t)
	player := token(t, "ann", auth.Player, nil)
	call := func(method, path, tok, body string, status int) string {
		t.Helper()
		st, got := post(ctx, t, method, g.HTTP+path, tok, body)
		if st != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, st, got, status)
		}
		return strings.TrimSpace(string(got))
	}
	want := func(method, path, tok, body, want string) {
		t.Helper()
		if got := call(method, path, tok, body, 200); got != want {
			t.Fatalf("%s %s:\n got %s\nwant %s", method, path, got, want)
		}
	}

	for _, bad := range []string{`{"regions":true,"shards":2}`, `{"regions":true,"cohort":{"size":5}}`,
		`{"regions":true,"decay":{"bucket":"1h","buckets":3,"factor":0.5},"tiebreak":"shared"}`} {
		if got := call("PUT", "/api/v1/boards/bad", admin, bad, 400); !strings.Contains(got, "field regions") {
			t.Errorf("PUT %s: %s, want a 400 naming regions", bad, got)
		}
	}
	call("PUT", "/api/v1/boards/rg", admin, `{"regions":true}`, 200)
	call("PUT", "/api/v1/boards/plain", admin, `{}`, 200)
	if got := call("PATCH", "/api/v1/boards/rg", admin, `{"regions":false}`, 409); !strings.Contains(got, "read_only") {
		t.Errorf("PATCH regions off: %s, want read_only", got)
	}
	call("PATCH", "/api/v1/boards/plain", admin, `{"regions":true}`, 409)

	// The country is the server's to set: a player gets 403 and nothing
	// changes.
	call("PUT", "/api/v1/members/ann/profile", player, `{"country":"DE"}`, 403)
	call("GET", "/api/v1/members/ann/profile", player, "", 404)
	for m, c := range map[string]string{"ann": "DE", "bob": "DE", "cid": "FR"} {
		call("PUT", "/api/v1/members/"+m+"/profile", server, `{"country":"`+c+`"}`, 200)
	}
	want("POST", "/api/v1/boards/rg/scores", server,
		`[{"id":"1","member":"ann","delta":10},{"id":"1","member":"bob","delta":20},{"id":"1","member":"cid","delta":30},{"id":"1","member":"dee","delta":5}]`,
		`[{"id":"1","board":"rg","member":"ann","score":10,"rank":1,"prev_rank":null,"duplicate":false,"seq":1,"region":"DE","region_rank":1},`+
			`{"id":"1","board":"rg","member":"bob","score":20,"rank":1,"prev_rank":null,"duplicate":false,"seq":2,"region":"DE","region_rank":1},`+
			`{"id":"1","board":"rg","member":"cid","score":30,"rank":1,"prev_rank":null,"duplicate":false,"seq":3,"region":"FR","region_rank":1},`+
			`{"id":"1","board":"rg","member":"dee","score":5,"rank":4,"prev_rank":null,"duplicate":false,"seq":4,"region":"ZZ","region_rank":1}]`)
	want("GET", "/api/v1/boards/rg/regions", player, "",
		`{"board":"rg","regions":[{"region":"DE","members":2},{"region":"FR","members":1},{"region":"ZZ","members":1}]}`)
	want("GET", "/api/v1/boards/rg/regions/DE/top", player, "",
		`{"board":"rg","region":"DE","offset":0,"entries":[{"rank":1,"member":"bob","score":20,"country":"DE"},{"rank":2,"member":"ann","score":10,"country":"DE"}],"total":2}`)
	want("GET", "/api/v1/boards/rg/regions/DE/top?offset=1&limit=1", player, "",
		`{"board":"rg","region":"DE","offset":1,"entries":[{"rank":2,"member":"ann","score":10,"country":"DE"}],"total":2}`)
	want("GET", "/api/v1/boards/rg/regions/JP/top", player, "", `{"board":"rg","region":"JP","offset":0,"entries":[],"total":0}`)
	want("GET", "/api/v1/boards/rg/members/ann?around=1", player, "",
		`{"board":"rg","member":"ann","rank":3,"score":10,"around":[{"rank":2,"member":"bob","score":20,"country":"DE"},{"rank":3,"member":"ann","score":10,"country":"DE"},{"rank":4,"member":"dee","score":5}],"region":"DE","region_rank":2}`)
	want("GET", "/api/v1/boards/rg/members/nobody", player, "", `{"board":"rg","member":"nobody","rank":null,"score":null,"around":[]}`)
	want("GET", "/api/v1/boards/rg/top", player, "",
		`{"board":"rg","offset":0,"entries":[{"rank":1,"member":"cid","score":30,"country":"FR"},{"rank":2,"member":"bob","score":20,"country":"DE"},{"rank":3,"member":"ann","score":10,"country":"DE"},{"rank":4,"member":"dee","score":5}],"total":4}`)

	// The server moves ann to France: her next event places her there.
	call("PUT", "/api/v1/members/ann/profile", server, `{"country":"FR"}`, 200)
	want("POST", "/api/v1/boards/rg/scores", server, `{"id":"2","member":"ann","delta":25}`,
		`{"id":"2","board":"rg","member":"ann","score":35,"rank":1,"prev_rank":3,"duplicate":false,"seq":5,"region":"FR","region_rank":1}`)
	want("GET", "/api/v1/boards/rg/regions", player, "",
		`{"board":"rg","regions":[{"region":"FR","members":2},{"region":"DE","members":1},{"region":"ZZ","members":1}]}`)
	want("GET", "/api/v1/boards/rg/regions/FR/top", player, "",
		`{"board":"rg","region":"FR","offset":0,"entries":[{"rank":1,"member":"ann","score":35,"country":"FR"},{"rank":2,"member":"cid","score":30,"country":"FR"}],"total":2}`)

	for _, path := range []string{"/api/v1/boards/rg/regions/de/top", "/api/v1/boards/rg/regions/XX/top",
		"/api/v1/boards/plain/regions", "/api/v1/boards/plain/regions/DE/top", "/api/v1/boards/rg/regions/DE/top?limit=0"} {
		if got := call("GET", path, player, "", 400); !strings.Contains(got, "bad_request") {
			t.Errorf("GET %s: %s, want bad_request", path, got)
		}
	}
	call("GET", "/api/v1/boards/none/regions", player, "", 404)
}
