package sock

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkFrameWrite is the socket end of a live frame: a 1 KB top frame
// written to one connection over loopback as the writer writes frames
// (Text and Flush: header and payload in one write(2), under the write
// deadline), alone ("one") and in a batch of 4 ("batched"); a plain TCP
// reader drains the socket. "direct" is a taker's write (TryTake, Text,
// Give): one non-blocking write(2) through the RawConn, owed bytes (rare
// here) flushed as the writer would.
func BenchmarkFrameWrite(b *testing.B) {
	frame := bytes.Repeat([]byte("x"), 1024)
	for _, batch := range []int{1, 4, 0} {
		name := "one"
		switch batch {
		case 0:
			name = "direct"
		case 4:
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(io.Discard, c)
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			cc := New(nc, nil, 5*time.Second, NewBuffers())
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if batch == 0 {
					owed := direct(b, cc, frame)
					if owed {
						if err := cc.Flush(); err != nil {
							b.Fatal(err)
						}
					}
					continue
				}
				for range batch {
					if err := cc.Text(frame); err != nil {
						b.Fatal(err)
					}
				}
				if err := cc.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			nc.Close()
			<-drained
		})
	}
}
