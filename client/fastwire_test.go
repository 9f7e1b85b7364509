package client

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/wsgateway/wsgateway/proto"
)

// slowAck is what the client made of a frame before parseAck: encoding/json
// into the frame union, then frame.ack. ok is false when the frame is not
// an ack (or not JSON).
func slowAck(b []byte) (proto.Ack, bool) {
	var f frame
	if f.decode(b) != nil || f.Type != proto.TypeAck {
		return proto.Ack{}, false
	}
	return f.ack(), true
}

// fastAck is parseAck's reading as dispatchAck turns it into an ack (with
// the call's strings never matching, so the frame's own are used).
func fastAck(a ackView) proto.Ack {
	ack := proto.Ack{Type: proto.TypeAck, ID: string(a.id), Board: string(a.board), Member: string(a.member),
		Score: a.score, Rank: a.rank, Duplicate: a.dup, Seq: a.seq, Period: a.period,
		Cohort: string(a.cohort), Tier: string(a.tier), Region: string(a.region), RegionRank: a.regionRank, Held: a.held}
	if a.hasPrevRank {
		pr := a.prevRank
		ack.PrevRank = &pr
	}
	return ack
}

// Every ack the gateway writes (proto.AppendAck, the one ack encoder) is
// read by the fast path, to the same ack encoding/json gives; every other
// frame the gateway sends (docs/protocol.md §4) and every ack it does not
// write this way falls back.
func TestParseAck(t *testing.T) {
	t.Parallel()
	pr := int64(9)
	acks := []proto.Ack{
		{Type: proto.TypeAck, ID: "a1b2c3d4-1", Board: "b", Member: "m1", Score: 42, Rank: 7, Seq: 1},
		{Type: proto.TypeAck, ID: "x", Board: "season-1", Member: "alice", Score: -5, Rank: 1, PrevRank: &pr, Duplicate: true, Seq: 1 << 40},
		{Type: proto.TypeAck, ID: "r", Board: "b", Member: "m", Score: math.MaxInt64, Rank: math.MaxInt64, PrevRank: &pr, Seq: math.MaxInt64, Period: 3},
		{Type: proto.TypeAck, ID: "r", Board: "b", Member: "m", Score: math.MinInt64, Rank: 0, Seq: 0},
		{Type: proto.TypeAck, ID: "", Board: "", Member: "", Score: 0},
		{Type: proto.TypeAck, ID: "c", Board: "groups", Member: "m", Score: 3, Rank: 2, Seq: 5, Cohort: "17"},
		{Type: proto.TypeAck, ID: "l", Board: "league", Member: "m", Score: 3, Rank: 1, PrevRank: &pr, Seq: 6, Period: 4, Cohort: "gold-2", Tier: "gold"},
		{Type: proto.TypeAck, ID: "g", Board: "world", Member: "m", Score: 3, Rank: 40, Seq: 7, Region: "DE", RegionRank: 2}, // §17
		{Type: proto.TypeAck, ID: "h", Board: "arena", Member: "m", Score: 1200, Rank: 1, Seq: 7, Period: 2, Held: true},
		{Type: proto.TypeAck, ID: "s", Board: "sharded", Member: "m", Score: 3, Seq: 8, Period: 2}, // no ranks (R24)
	}
	for _, a := range acks {
		b := proto.AppendAck(nil, &a)
		v, ok := parseAck(b)
		if !ok {
			t.Errorf("parseAck(%s) declined an ack the gateway writes", b)
			continue
		}
		want, _ := slowAck(b)
		if got := fastAck(v); !reflect.DeepEqual(got, want) {
			t.Errorf("parseAck(%s) = %+v, encoding/json %+v", b, got, want)
		}
	}
	declined := []string{
		// hot boards' scores (R22), escapes, non-ASCII: encoding/json's
		`{"type":"ack","id":"r","board":"hot","member":"a","score":7.000,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r\"1","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"é","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		// another order, spaces, more or fewer fields
		`{"id":"r","type":"ack","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack", "id":"r","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4,"x":1}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":7,"rank":1,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":7,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}x`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":7,"rank":1,"prev_rank":null,"duplicate":false,"seq":4`,
		// numbers JSON or int64 do not have
		`{"type":"ack","id":"r","board":"b","member":"a","score":07,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":1e3,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":9223372036854775808,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":-,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":1,"rank":1,"prev_rank":null,"duplicate":nope,"seq":4}`,
		// cohort and tier out of order, or not strings
		`{"type":"ack","id":"r","board":"b","member":"a","score":1,"rank":1,"prev_rank":null,"duplicate":false,"seq":4,"tier":"x","cohort":"x-1"}`,
		`{"type":"ack","id":"r","board":"b","member":"a","score":1,"rank":1,"prev_rank":null,"duplicate":false,"seq":4,"cohort":3}`,
		// every other frame of the gateway
		`{"type":"error","id":"r","code":"rate_limited","message":"rate limited","retry_after_ms":120}`,
		`{"type":"error","code":"bad_request","message":"not JSON"}`,
		`{"type":"welcome","member":"m","role":"server","node":"n1","server_time":1,"exp":2,"limits":{"max_message":4096,"rate":50}}`,
		`{"type":"subscribed","id":"r","board":"b"}`,
		`{"type":"unsubscribed","id":"r","board":"b"}`,
		`{"type":"page","id":"r","board":"b","offset":0,"entries":[],"total":0}`,
		`{"type":"rank","id":"r","board":"b","member":"m","rank":null,"score":null,"around":[]}`,
		`{"type":"authed","id":"r","exp":5}`,
		`{"type":"top","board":"b","seq":3,"entries":[{"rank":1,"member":"a","score":1}],"total":1,"ts":1}`,
		`{"type":"view","board":"b","member":"a","rank":1,"score":1,"around":[],"seq":1,"ts":1}`,
		`{"type":"board","board":"b","state":"final","period":2,"ts":1}`,
		``, `{`, `null`,
	}
	for _, s := range declined {
		if v, ok := parseAck([]byte(s)); ok {
			t.Errorf("parseAck(%s) = %+v, want it declined", s, v)
		}
	}
}

// FuzzParseAck: whatever parseAck accepts, encoding/json reads as the same
// ack. Seeded with the gateway's acks and their near misses.
func FuzzParseAck(f *testing.F) {
	pr := int64(3)
	for _, a := range []proto.Ack{
		{Type: proto.TypeAck, ID: "id-1", Board: "b", Member: "m", Score: 10, Rank: 2, Seq: 5},
		{Type: proto.TypeAck, ID: "id-2", Board: "b", Member: "m", Score: -10, Rank: 2, PrevRank: &pr, Duplicate: true, Seq: 5, Period: 7},
	} {
		f.Add(proto.AppendAck(nil, &a))
	}
	f.Add([]byte(`{"type":"ack","id":"r","board":"b","member":"a","score":-0,"rank":0,"prev_rank":null,"duplicate":false,"seq":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := parseAck(b)
		if !ok {
			return
		}
		want, ok := slowAck(b)
		if !ok {
			t.Fatalf("parseAck accepted %q, which encoding/json does not read as an ack", b)
		}
		if got := fastAck(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("parseAck(%q) = %+v, encoding/json %+v", b, got, want)
		}
	})
}

// The score request is the bytes proto.Marshal(proto.Request) writes.
func TestAppendScoreReq(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id, board, member string
		delta             bool
		v                 int64
		meta              string
	}{
		{"p-1", "b", "m", true, 5, ""},
		{"p-2", "b", "", false, -7, ""},
		{"p-3", "", "", true, math.MinInt64, ""},
		{"weird \"id\" <&> é\x01", "b\\", "m\u2028", false, math.MaxInt64, ""},
		{"p-4", "b", "m", false, 9, `{"replay":"https://r.example/1","k":[1,{"x":null}]}`},
	} {
		req := proto.Request{Type: proto.TypeScore, ID: tc.id, Board: tc.board, Member: tc.member}
		if tc.meta != "" {
			req.Meta = json.RawMessage(tc.meta)
		}
		key := "value"
		n := json.RawMessage([]byte(jsonInt(tc.v)))
		if tc.delta {
			key, req.Delta = "delta", n
		} else {
			req.Value = n
		}
		want, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendScoreReq([]byte("junk")[:0], tc.id, tc.board, tc.member, key, tc.v, []byte(tc.meta)); string(got) != string(want) {
			t.Errorf("appendScoreReq = %s, proto.Marshal %s", got, want)
		}
	}
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }
