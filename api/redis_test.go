package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/redisstore"
)

// redisEngine runs the end-to-end tables against a real redis-server of the
// test's own (testenv.Missing when redis-server is not installed).
func redisEngine() engine {
	return engine{"redis", func(t testing.TB) rank.Store {
		_, s := startRedisStore(t)
		return s
	}}
}

// startRedisStore starts a redis-server of the test's own and the Redis
// engine on it; the server is returned for fault injection.
func startRedisStore(t testing.TB) (*testenv.Redis, rank.Store) {
	t.Helper()
	srv := testenv.StartRedis(t)
	client, err := redisstore.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(context.Background(), client, rank.Hooks{}, redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return srv, s
}

// TestScoresArrayStall: Redis freezes (DEBUG SLEEP 3, past the store's 2 s
// timeout) while a 1,000-event array is in the async lane. The elements not
// acknowledged are a suffix of the array, each `unavailable`, and nothing
// after the calls already sent is applied. Re-sending the whole array then
// applies the rest in array order, so on a `set` board the last value wins.
func TestScoresArrayStall(t *testing.T) {
	t.Parallel()
	srv, s := startRedisStore(t)
	e := newEnv(t, s)
	e.putBoard("stall", `{"mode":"set"}`)
	tok := serverToken(t)
	post := func(body string) (int, []ack, error) {
		req, err := http.NewRequest("POST", e.url+"/api/v1/boards/stall/scores", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		var out []ack
		return res.StatusCode, out, json.NewDecoder(res.Body).Decode(&out)
	}

	for try := range 5 {
		member := fmt.Sprintf("m%d", try)
		var sb strings.Builder
		sb.WriteByte('[')
		for j := range 1000 {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"t%d-%d","member":"%s","value":%d}`, try, j, member, j+1)
		}
		sb.WriteByte(']')
		body := sb.String()
		type answer struct {
			status int
			res    []ack
			err    error
		}
		// The idempotency records: fields of the board's bucket hashes
		// (rank/lua/prelude.lua), one per applied event.
		keys := func() int {
			n, err := testenv.RedisCommand(srv.Addr(), "EVAL", "local n = 0 for _, k in ipairs(redis.call('KEYS', '*:r:*')) do n = n + redis.call('HLEN', k) end return n", "0")
			if err != nil {
				t.Fatal(err)
			}
			v, _ := strconv.Atoi(strings.TrimPrefix(n, ":"))
			return v
		}
		base := keys()
		done := make(chan answer, 1)
		go func() {
			st, res, err := post(body)
			done <- answer{st, res, err}
		}()
		// Each applied event adds its idempotency record: freeze Redis once
		// the array is flowing through the lane.
		testenv.Until(t, 10*time.Second, "the array's first events applied", func() bool { return keys() >= base+10 })
		if _, err := testenv.RedisCommand(srv.Addr(), "DEBUG", "SLEEP", "3"); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil || a.status != 200 || len(a.res) != 1000 {
			t.Fatalf("try %d: status %d, %d results, %v", try, a.status, len(a.res), a.err)
		}
		first := -1
		for i, r := range a.res {
			switch {
			case r.Error != nil && r.Error.Code != "unavailable":
				t.Fatalf("element %d: %+v; want an ack or unavailable", i, *r.Error)
			case r.Error != nil && first < 0:
				first = i
			case r.Error == nil && first >= 0:
				t.Fatalf("element %d acknowledged after element %d failed: the failures must be a suffix", i, first)
			}
		}
		if first < 0 {
			continue // the array was done before Redis froze: try again
		}
		st, res, err := post(body)
		if err != nil || st != 200 {
			t.Fatalf("re-send: %d %v", st, err)
		}
		// Those before the first failure were applied, and so may be the
		// failed ones that were already sent when Redis froze (it ran them
		// on waking): an unavailable element's outcome is unknown. Nothing
		// later was sent. So the re-send is duplicates, then fresh acks.
		applied := 0
		for i, r := range res {
			switch {
			case r.Error != nil:
				t.Fatalf("re-sent element %d: %+v", i, *r.Error)
			case r.Duplicate && applied != i:
				t.Fatalf("re-sent element %d is a duplicate after element %d was fresh: applied out of order", i, applied)
			case r.Duplicate:
				applied++
			}
		}
		if applied < first {
			t.Fatalf("%d elements applied before the re-send, but the first %d were acknowledged", applied, first)
		}
		var m ack
		e.do("GET", "/api/v1/boards/stall/members/"+member, tok, "").json(t, &m)
		if m.Score != 1000 {
			t.Errorf("%s's score %d after the re-send; in array order the last value, 1000, wins", member, m.Score)
		}
		t.Logf("try %d: elements %d..999 unavailable (%d..%d already sent when Redis froze, so applied), then applied in order by the re-send", try, first, first, applied-1)
		return
	}
	t.Fatal("in 5 tries Redis never froze inside an array")
}
