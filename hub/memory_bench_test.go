package hub_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// BenchmarkSubscribedMemory is what the hub holds per connection for its
// whole life: N spectators on real loopback sockets, "idle" only
// authenticated, "subscribed" also subscribed to a top-10 board with their
// first frame written. The clients are bare TCP sockets that read nothing
// more once set up, so nearly all of the live heap and stacks the
// connections add is the gateway's; the metric is that growth per
// connection, after a collection (pooled buffers of idle connections count
// only if something still holds them).
func BenchmarkSubscribedMemory(b *testing.B) {
	for _, subscribed := range []bool{false, true} {
		name := "idle"
		if subscribed {
			name = "subscribed"
		}
		b.Run(name, func(b *testing.B) { benchMemory(b, subscribed) })
	}
}

func benchMemory(b *testing.B, subscribed bool) {
	const conns = 500
	in := newInfra(b, memoryKind)
	g := in.gateway(b, gwOptions{})
	g.board("mem", nil)
	srv := g.dial(in.token(b, "srv", auth.Server))
	for i := range 20 {
		srv.score("mem", fmt.Sprint("m", i), int64(i))
	}
	host := mustHost(b, g.URL)
	tokens := make([]string, conns)
	for i := range tokens {
		tokens[i] = in.token(b, fmt.Sprint("spec", i), auth.Spectator)
	}
	for b.Loop() {
		before := liveBytes()
		socks := make([]net.Conn, conns)
		for i := range socks {
			socks[i] = rawSpectator(b, host, tokens[i], subscribed)
		}
		after := liveBytes()
		b.ReportMetric(float64(after-before)/conns, "B/conn")
		for _, s := range socks {
			s.Close()
		}
	}
}

// liveBytes is the live heap and goroutine stacks after a collection.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC() // the second empties the pools the first moved to their victim caches
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

func mustHost(b testing.TB, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		b.Fatal(err)
	}
	return p.Host
}

// rawDial upgrades a bare TCP connection with token; br has read the
// response's head, frames follow.
func rawDial(t testing.TB, host, token string) (nc net.Conn, br *bufio.Reader) {
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Authorization: Bearer %s\r\n\r\n", host, key, proto.Subprotocol, token)
	br = bufio.NewReader(nc)
	readUntil(t, nc, br, "\r\n\r\n")
	return nc, br
}

// rawSpectator upgrades a bare TCP connection with token, reads up to the
// welcome (and, when subscribe, sends a subscribe to a top-10 of board
// "mem" and reads up to its first top frame), and returns the socket.
func rawSpectator(b *testing.B, host, token string, subscribe bool) net.Conn {
	nc, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Authorization: Bearer %s\r\n\r\n", host, key, proto.Subprotocol, token)
	br := bufio.NewReader(nc)
	readUntil(b, nc, br, `"type":"welcome"`)
	if subscribe {
		if _, err := nc.Write(maskedText(`{"type":"subscribe","id":"s1","board":"mem","top":10}`)); err != nil {
			b.Fatal(err)
		}
		readUntil(b, nc, br, `"type":"top"`)
	}
	return nc
}

// readUntil reads nc until what it read contains want.
func readUntil(b testing.TB, nc net.Conn, br *bufio.Reader, want string) {
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer nc.SetReadDeadline(time.Time{})
	var seen []byte
	for !bytes.Contains(seen, []byte(want)) {
		c, err := br.ReadByte()
		if err != nil {
			b.Fatalf("waiting for %s: %v (read %q)", want, err, seen)
		}
		seen = append(seen, c)
	}
}

// maskedText is s as one masked client text frame (payload under 126).
func maskedText(s string) []byte {
	f := []byte{0x81, 0x80 | byte(len(s)), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[2:], 0x01020304)
	for i := range len(s) {
		f = append(f, s[i]^f[2+i%4])
	}
	return f
}
