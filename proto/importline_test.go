package proto

import (
	"errors"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

func TestDecodeImportLine(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want ImportLine
	}{
		{`{"member":"a","delta":-5}`, ImportLine{Member: "a", Op: rank.OpDelta, Amount: -5}},
		{` {"value":9007199254740991,"member":"b","name":"Bee"} `, ImportLine{Member: "b", Op: rank.OpValue, Amount: rank.MaxScore, Name: "Bee"}},
		{`{"member":"c","delta":1,"meta":{"k":[1,2]}}`, ImportLine{Member: "c", Op: rank.OpDelta, Amount: 1, Meta: `{"k":[1,2]}`}},
	}
	for _, tc := range ok {
		got, err := DecodeImportLine([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct {
		in   string
		want error
	}{
		{`{"member":"a"}`, ErrBadRequest},
		{`{"delta":1}`, ErrBadRequest},
		{`{"member":"a","delta":1,"value":2}`, ErrBadRequest},
		{`{"member":"a","delta":1.5}`, ErrInvalidScore},
		{`{"member":"a","delta":"1"}`, ErrInvalidScore},
		{`{"member":"a","delta":9007199254740992}`, ErrInvalidScore},
		{`{"member":"a","delta":1,"id":"x"}`, ErrBadRequest},
		{`{"member":"a","delta":1,"type":"score"}`, ErrBadRequest},
		{`{"member":"a","delta":1,"member":"b"}`, ErrBadRequest},
		{`{"member":"a","delta":1,"name":""}`, ErrBadRequest},
		{`{"member":"a","delta":1,"name":5}`, ErrBadRequest},
		{`{"member":"a","delta":1,"meta":[1]}`, ErrBadRequest},
		{`[{"member":"a","delta":1}]`, ErrBadRequest},
		{`{"member":"a","delta":1}{}`, ErrBadRequest},
	}
	for _, tc := range bad {
		if _, err := DecodeImportLine([]byte(tc.in)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.in, err, tc.want)
		}
	}
}

func TestAppendAckCapped(t *testing.T) {
	t.Parallel()
	a := Ack{Type: TypeAck, ID: "1", Board: "b", Member: "m", Score: 100, Rank: 1, Seq: 3, Capped: true, Applied: 40}
	want := `{"type":"ack","id":"1","board":"b","member":"m","score":100,"rank":1,"prev_rank":null,"duplicate":false,"seq":3,"capped":true,"applied":40}`
	if got := string(AppendAck(nil, &a)); got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
	a.Capped, a.Applied = false, 0
	if got := string(AppendAck(nil, &a)); got != `{"type":"ack","id":"1","board":"b","member":"m","score":100,"rank":1,"prev_rank":null,"duplicate":false,"seq":3}` {
		t.Fatalf("uncapped: %s", got)
	}
}
