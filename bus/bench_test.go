package bus

import (
	"encoding/json"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"

	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkPublishReceive measures changes/s from Publish on one node to
// OnChanges on another, through a real nats-server.
//
//	go test ./bus/ -run '^$' -bench PublishReceive -benchtime 200000x
func BenchmarkPublishReceive(b *testing.B) {
	srv := testenv.StartNATS(b)
	var got atomic.Int64
	done := make(chan struct{})
	var target int64
	pub := newBus(b, Config{URL: srv.URL(), Node: "pub"})
	sub := newBus(b, Config{URL: srv.URL(), Node: "sub", OnChanges: func(batch []rank.Change) {
		if got.Add(int64(len(batch))) == target {
			close(done)
		}
	}})
	ready(b, pub, sub)
	boards := make([]string, 16)
	for i := range boards {
		boards[i] = "board." + strconv.Itoa(i)
	}
	target = int64(b.N)
	old := int64(100)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		// Stay under the queue bound: this measures throughput, not drops.
		if i%1024 == 0 {
			for pub.queued() > defaultMaxPending/2 {
				runtime.Gosched()
			}
		}
		pub.Publish(rank.Change{Board: boards[i%len(boards)], Seq: int64(i), Member: "member-" + strconv.Itoa(i%1000),
			Old: &old, New: int64(i), Rank: int64(i%50 + 1), PrevRank: 7})
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("received %d of %d (stats %+v)", got.Load(), b.N, pub.Stats())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	s := pub.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "changes/s")
	b.ReportMetric(float64(s.Published)/float64(max(s.Messages, 1)), "changes/msg")
	if s.Dropped != 0 {
		b.Fatalf("dropped %d", s.Dropped)
	}
}

// BenchmarkCodec compares the binary payload with a JSON array of the same
// 64 changes, per batch.
//
//	go test ./bus/ -run '^$' -bench Codec
func BenchmarkCodec(b *testing.B) {
	old := int64(1234567)
	batch := make([]rank.Change, 64)
	for i := range batch {
		batch[i] = rank.Change{Board: "run_hero", Seq: int64(1000 + i), Member: "player-" + strconv.Itoa(i), Old: &old,
			New: 1234600, Rank: int64(i + 1), PrevRank: int64(i + 3), Name: "Player Name"}
	}
	js, _ := json.Marshal(batch)
	bin := appendChanges(nil, "run_hero", batch)
	for _, enc := range []struct {
		name    string
		data    []byte
		marshal func(dst []byte) []byte
	}{
		{"json", js, func(dst []byte) []byte { d, _ := json.Marshal(batch); return d }},
		{"binary", bin, func(dst []byte) []byte { return appendChanges(dst[:0], "run_hero", batch) }},
	} {
		b.Run(enc.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(len(enc.data))/float64(len(batch)), "bytes/change")
			var dst []byte
			for range b.N {
				dst = enc.marshal(dst)
			}
		})
		b.Run(enc.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := decodeChanges(enc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
