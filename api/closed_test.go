package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/wsgateway/wsgateway/proto"
	"github.com/wsgateway/wsgateway/rank"
)

// closing wraps a store and refuses the events of the members it names
// with their rank.ClosedError, as an engine does for a board that is not
// open to them.
type closing struct {
	rank.Store
	why map[string]*rank.ClosedError
}

func (c *closing) Apply(ctx context.Context, e rank.Event, done rank.Done) {
	if ce, ok := c.why[e.Member]; ok {
		done(rank.Result{}, fmt.Errorf("memstore: apply %s: %w", e.Board, ce))
		return
	}
	c.Store.Apply(ctx, e, done)
}

// TestBoardClosedReason: a REST board_closed error, alone (409) or as one
// element of a scores array, says why and when (R30): the reason, and only
// the times of that reason.
func TestBoardClosedReason(t *testing.T) {
	t.Parallel()
	why := map[string]*rank.ClosedError{
		"early": {Reason: rank.ClosedNotStarted, StartsAt: 1_800_000_000_000},
		"late":  {Reason: rank.ClosedEnded, FinalAt: 1_800_000_000_001},
		"past":  {Reason: rank.ClosedPeriodOver, Period: 20261127, GraceEnd: 1_800_000_000_002},
		"cold":  {Reason: rank.ClosedOutsideWindow},
	}
	want := map[string]string{
		"early": `"reason":"not_started","starts_at":1800000000000`,
		"late":  `"reason":"ended","final_at":1800000000001`,
		"past":  `"reason":"period_over","period":20261127,"grace_end":1800000000002`,
		"cold":  `"reason":"outside_window"`,
	}
	e := newEnv(t, &closing{Store: memEngine().new(t), why: why})
	e.putBoard("cl", "")
	tok := serverToken(t)
	for m, ce := range why {
		r := e.do("POST", "/api/v1/boards/cl/scores", tok, `{"id":"1","member":"`+m+`","delta":1}`)
		eb := r.wantError(t, 409, proto.CodeBoardClosed)
		if eb.Error.Closed != rank.Closed(*ce) || eb.Error.Message != ce.Error() {
			t.Errorf("%s: error %+v, want the reason and times of %+v", m, eb.Error, ce)
		}
		body := `{"error":{"code":"board_closed","message":"` + ce.Error() + `",` + want[m] + `}}`
		if got := string(r.body); got != body && got != body+"\n" {
			t.Errorf("%s: body %s, want %s", m, got, body)
		}
	}

	r := e.do("POST", "/api/v1/boards/cl/scores", tok,
		`[{"id":"1","member":"ok","delta":1},{"id":"2","member":"past","delta":1},{"id":"3","member":"early","delta":1}]`)
	r.wantStatus(t, 200)
	var out []struct {
		ID    string          `json:"id"`
		Error json.RawMessage `json:"error"`
	}
	r.json(t, &out)
	if len(out) != 3 || out[0].Error != nil {
		t.Fatalf("answer %s", r.body)
	}
	for i, m := range []string{"past", "early"} {
		e := `{"code":"board_closed","message":"` + why[m].Error() + `",` + want[m] + `}`
		if got := string(out[i+1].Error); got != e {
			t.Errorf("element %d: error %s, want %s", i+1, got, e)
		}
	}
}
