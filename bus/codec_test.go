package bus

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		batch []rank.Change
	}{
		{"new member", []rank.Change{{Seq: 1, Member: "alice", New: 10, Rank: 1}}},
		{"every field", []rank.Change{{Seq: 99, Member: "bob@x:y", Old: ptr(-5), New: 1 << 53, Rank: 3, PrevRank: 4, Period: 2026, Name: "Bob ✓", Cohort: "silver-12"}}},
		{"cohort alone", []rank.Change{{Seq: 3, Member: "c", New: 7, Rank: 2, Cohort: "4"}}},
		{"region", []rank.Change{{Seq: 4, Member: "d", New: 8, Rank: 9, Region: "DE", RegionRank: 2}}},
		{"region move", []rank.Change{{Seq: 5, Member: "e", Old: ptr(1), New: 8, Rank: 9, PrevRank: 7, Region: "FR", RegionRank: 1, RegionFrom: "DE"}}},
		{"extremes", []rank.Change{{Seq: math.MaxInt64, Member: strings.Repeat("m", 64), Old: ptr(math.MinInt64), New: -(1<<53 - 1), Rank: -1, PrevRank: math.MaxInt64, Period: -1}}},
		{"old zero is not nil", []rank.Change{{Seq: 2, Member: "z", Old: ptr(0), New: 0, Rank: 1, PrevRank: 1}}},
		{"many", func() []rank.Change {
			var b []rank.Change
			for i := range 300 {
				b = append(b, rank.Change{Seq: int64(i + 1), Member: "m" + strings.Repeat("x", i%64), Old: ptr(int64(i)), New: int64(i * 7), Rank: int64(i%9 + 1)})
			}
			return b
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := range tt.batch {
				tt.batch[i].Board = "cup.2026-final"
			}
			data := appendChanges(nil, "cup.2026-final", tt.batch)
			got, err := decodeChanges(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.batch) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.batch)
			}
			// Every strict prefix is rejected, never misread.
			for n := range len(data) {
				if _, err := decodeChanges(data[:n]); err == nil {
					t.Fatalf("prefix of %d/%d bytes decoded", n, len(data))
				}
			}
			// The JSON form decodes to the same batch.
			js, _ := json.Marshal(tt.batch)
			got, err = decodeChanges(js)
			if err != nil || !reflect.DeepEqual(got, tt.batch) {
				t.Errorf("json form: %v, %+v", err, got)
			}
		})
	}
}

func TestCodecRejects(t *testing.T) {
	t.Parallel()
	good := appendChanges(nil, "b", []rank.Change{{Board: "b", Seq: 1, Member: "m", New: 1, Rank: 1}})
	tests := map[string][]byte{
		"empty":           nil,
		"unknown version": {0x02, 1, 'b', 0},
		"bad json":        []byte(`[{"seq":`),
		"trailing":        append(append([]byte{}, good...), 0),
		"huge count":      {codecV1, 1, 'b', 0xff, 0xff, 0xff, 0xff, 0x0f},
		"unknown flag":    {codecV1, 1, 'b', 1, 0x80, 1, 0, 2, 2, 1},
	}
	for name, data := range tests {
		if got, err := decodeChanges(data); err == nil {
			t.Errorf("%s: decoded %+v", name, got)
		}
	}
}

func FuzzDecodeChanges(f *testing.F) {
	f.Add(appendChanges(nil, "run_hero", []rank.Change{{Seq: 1, Member: "a", Old: ptr(3), New: 4, Rank: 1, PrevRank: 2, Period: 7, Name: "A", Cohort: "gold-1"}}))
	f.Add(appendChanges(nil, "world", []rank.Change{{Seq: 2, Member: "b", New: 4, Rank: 3, Region: "JP", RegionRank: 1, RegionFrom: "ZZ"}}))
	f.Add([]byte(`[{"board":"x","seq":1,"member":"m","old":null,"new":1,"rank":1,"prev_rank":0}]`))
	f.Add([]byte{codecV1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		batch, err := decodeChanges(data)
		if err != nil || len(batch) == 0 || data[0] != codecV1 {
			return
		}
		// Whatever decodes survives a re-encode unchanged.
		again, err := decodeChanges(appendChanges(nil, batch[0].Board, batch))
		if err != nil || !reflect.DeepEqual(again, batch) {
			t.Fatalf("re-encode changed the batch: %v\n%+v\n%+v", err, batch, again)
		}
	})
}
