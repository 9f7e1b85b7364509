package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkScoresArray posts arrays of 1000 fresh events over HTTP:
// decoding, checking, applying and encoding the answers; on Redis the array
// leaves in pipelines.
func BenchmarkScoresArray(b *testing.B) {
	for _, tc := range []struct {
		name string
		new  func(testing.TB) rank.Store
	}{
		{"memory", memEngine().new},
		{"redis", redisEngine().new},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, tc.new(b))
			e.putBoard("bench", "")
			tok := serverToken(b)
			path := "/api/v1/boards/bench/scores"
			var sb strings.Builder
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.Reset()
				sb.WriteByte('[')
				for j := range 1000 {
					if j > 0 {
						sb.WriteByte(',')
					}
					fmt.Fprintf(&sb, `{"id":"e%d-%d","member":"m%d","delta":%d}`, i, j, j%500, j)
				}
				sb.WriteByte(']')
				if r := e.do("POST", path, tok, sb.String()); r.status != 200 {
					b.Fatalf("status %d: %s", r.status, r.body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
		})
	}
}

// benchBoard is an API whose board "bench" holds m0…m999.
func benchBoard(b *testing.B) *env {
	e := newEnv(b, memEngine().new(b))
	e.putBoard("bench", "")
	var sb strings.Builder
	sb.WriteByte('[')
	for j := range 1000 {
		if j > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"e%d","member":"m%d","delta":%d}`, j, j, j)
	}
	sb.WriteByte(']')
	e.scores("bench", sb.String())
	return e
}

// BenchmarkTop reads a 10-entry page over HTTP.
func BenchmarkTop(b *testing.B) {
	e := benchBoard(b)
	tok := serverToken(b)
	b.ReportAllocs()
	for b.Loop() {
		if r := e.do("GET", "/api/v1/boards/bench/top?limit=10", tok, ""); r.status != 200 {
			b.Fatalf("status %d", r.status)
		}
	}
}

// BenchmarkScoreOne posts one event per request over a keep-alive
// connection, as the gateway serves it (fasthttp); bench/run.sh's rest part
// measures the same path under 64 clients.
func BenchmarkScoreOne(b *testing.B) {
	e := newEnv(b, memEngine().new(b))
	e.putBoard("bench", "")
	tok := serverToken(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body := fmt.Sprintf(`{"id":"e%d","member":"m%d","delta":1}`, i, i%1000)
		if r := e.do("POST", "/api/v1/boards/bench/scores", tok, body); r.status != 200 {
			b.Fatalf("status %d: %s", r.status, r.body)
		}
	}
}

// BenchmarkMemberRead reads a member with 5 neighbours each side.
func BenchmarkMemberRead(b *testing.B) {
	e := benchBoard(b)
	tok := serverToken(b)
	b.ReportAllocs()
	for b.Loop() {
		if r := e.do("GET", "/api/v1/boards/bench/members/m7?around=5", tok, ""); r.status != 200 {
			b.Fatalf("status %d: %s", r.status, r.body)
		}
	}
}
