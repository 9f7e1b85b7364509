package hub

import (
	"testing"

	"github.com/wsgateway/wsgateway/proto"
)

func BenchmarkDecode(b *testing.B) {
	msg := []byte(`{"type":"score","id":"c1-r12345","board":"run_hero","member":"alice","delta":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := proto.DecodeMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}
