package client

import "testing"

// A hot board's scores arrive with 3 decimals (R22): the client decodes
// them as integer thousandths and says so; integer scores stay as they are.
func TestFrameDecimals(t *testing.T) {
	t.Parallel()
	var f frame
	if err := f.decode([]byte(`{"type":"top","board":"hot","seq":3,"entries":[{"rank":1,"member":"a","score":12.345},{"rank":2,"member":"b","score":-0.005}],"total":2,"ts":1}`)); err != nil {
		t.Fatal(err)
	}
	top := f.top()
	if top.Decimals != 3 || top.Entries[0].Score != 12345 || top.Entries[1].Score != -5 {
		t.Fatalf("hot top frame decoded as %+v", top)
	}
	f = frame{}
	if err := f.decode([]byte(`{"type":"ack","id":"r1","board":"hot","member":"a","score":7.000,"rank":1,"prev_rank":null,"duplicate":false,"seq":4}`)); err != nil {
		t.Fatal(err)
	}
	if a := f.ack(); a.Decimals != 3 || a.Score != 7000 {
		t.Fatalf("hot ack decoded as %+v", a)
	}
	f = frame{}
	if err := f.decode([]byte(`{"type":"view","board":"b","member":"a","rank":1,"score":120,"around":[{"rank":1,"member":"a","score":120}],"seq":1,"ts":1}`)); err != nil {
		t.Fatal(err)
	}
	if v := f.view(); v.Decimals != 0 || *v.Score != 120 || v.Around[0].Score != 120 {
		t.Fatalf("plain view decoded as %+v", v)
	}
}

// A board frame's viewers (§14) reach the subscription's State channel;
// a frame without them says nil, not 0.
func TestFrameViewers(t *testing.T) {
	t.Parallel()
	var f frame
	if err := f.decode([]byte(`{"type":"board","board":"b","state":"open","starts_at":null,"ends_at":null,"final_at":null,"ts":1,"viewers":3}`)); err != nil {
		t.Fatal(err)
	}
	if b := f.board(); b.Viewers == nil || *b.Viewers != 3 || b.State != "open" {
		t.Fatalf("board frame decoded as %+v", b)
	}
	f = frame{}
	if err := f.decode([]byte(`{"type":"board","board":"b","state":"open","starts_at":null,"ends_at":null,"final_at":null,"ts":1}`)); err != nil {
		t.Fatal(err)
	}
	if b := f.board(); b.Viewers != nil {
		t.Fatalf("viewers %d in a frame without them", *b.Viewers)
	}
}
