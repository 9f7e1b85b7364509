package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// TestMergeBoard: RFC 7396 on a stored config: objects merge key by key,
// null removes (the default returns), arrays and scalars replace; a config
// stored before v1.1 (no retain) patches like any other.
func TestMergeBoard(t *testing.T) {
	t.Parallel()
	patch := func(s string) map[string]any {
		t.Helper()
		p, _, err := parsePatch([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hot := rank.DefaultBoard("hot")
	hot.Tiebreak = rank.Shared
	hot.Decay = rank.Decay{Bucket: rank.Duration(time.Hour), Buckets: 24, Factor: 0.9}
	hot.MaxDelta = rank.MaxScore
	got, err := mergeBoard(hot, patch(`{"decay":{"factor":0.5},"title":"Trend"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := hot
	want.Decay.Factor, want.Title = 0.5, "Trend"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nested merge:\n got  %+v\n want %+v", got, want)
	}

	tiered := rank.DefaultBoard("t")
	if err := json.Unmarshal([]byte(`[{"name":"Gold","top_rank":1},{"name":"Silver","top_rank":3}]`), &tiered.Tiers); err != nil {
		t.Fatal(err)
	}
	tiered.MaxSubmissions = 3
	got, err = mergeBoard(tiered, patch(`{"tiers":[{"name":"Top","top_rank":5}],"max_submissions":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(got.Tiers); string(g) != `[{"name":"Top","top_rank":5}]` || got.MaxSubmissions != 0 {
		t.Errorf("arrays replace, null restores the default: tiers %s, max_submissions %d", g, got.MaxSubmissions)
	}

	legacy := rank.DefaultBoard("old")
	legacy.Retain = 0
	got, err = mergeBoard(legacy, patch(`{"title":"Old"}`))
	if err != nil || got.Retain != rank.DefaultRetain || got.Title != "Old" {
		t.Errorf("a config without retain: %+v, %v", got, err)
	}
}
