package redisstore

import (
	"reflect"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// parseRanks reads both forms of ranks.lua's reply: with around 0 each
// member is its rank (0: absent) and its own entry's score, name and meta;
// otherwise found, rank, start, first_rank, n and the window. A reply cut
// short is an error, not a panic or a member read from the next one's values.
func TestParseRanks(t *testing.T) {
	t.Parallel()
	asc := rank.DefaultBoard("b")
	asc.Order = rank.Asc
	head := []any{int64(2), int64(40), int64(7)}
	reply := func(rest ...any) []any { return append(append([]any(nil), head...), rest...) }

	r, err := parseRanks(reply(int64(3), "-12", "Ann", `{"k":1}`, int64(0), int64(9), "-5", "", ""),
		[]string{"ann", "gone", "bob"}, 0, asc)
	if err != nil {
		t.Fatal(err)
	}
	want := rank.Ranks{Period: 2, Total: 40, Seq: 7, Members: []rank.MemberRank{
		{Member: "ann", Found: true, Rank: 3, Score: 12, Name: "Ann", Around: []rank.Entry{{Rank: 3, Member: "ann", Score: 12, Name: "Ann", Meta: `{"k":1}`}}},
		{Member: "gone"},
		{Member: "bob", Found: true, Rank: 9, Score: 5, Around: []rank.Entry{{Rank: 9, Member: "bob", Score: 5}}},
	}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("around 0:\n got %+v\nwant %+v", r, want)
	}

	r, err = parseRanks(reply(int64(0), int64(0), int64(0), int64(0), int64(0),
		int64(1), int64(2), int64(0), int64(1), int64(2), "x", "-20", "", "", "ann", "-12", "Ann", ""),
		[]string{"gone", "ann"}, 1, asc)
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Members[1]; r.Members[0].Found || !m.Found || m.Rank != 2 || m.Score != 12 || m.Name != "Ann" || len(m.Around) != 2 || m.Around[0].Rank != 1 || m.Around[0].Score != 20 {
		t.Fatalf("around 1: %+v", r)
	}

	for _, c := range []struct {
		name    string
		v       any
		members []string
		around  int
	}{
		{"no header", []any{int64(1)}, nil, 0},
		{"rank without entry", reply(int64(3), "12", "Ann"), []string{"ann"}, 0},
		{"second member missing", reply(int64(0)), []string{"gone", "ann"}, 0},
		{"bad score", reply(int64(3), "x", "", ""), []string{"ann"}, 0},
		{"window cut short", reply(int64(1), int64(1), int64(0), int64(1), int64(2), "ann", "12", "", ""), []string{"ann"}, 1},
	} {
		if _, err := parseRanks(c.v, c.members, c.around, asc); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
