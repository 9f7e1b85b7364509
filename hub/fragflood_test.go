package hub_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
)

// TestFragmentFloodClosed (issue 33 B5): a client that sends a message in
// 1-byte fragments spends the frame budget like one sending empty pings;
// every fragment is a frame the library parses. Far fewer bytes than the
// message limit, so only the frame budget can end it: the connection is
// closed with 1008.
func TestFragmentFloodClosed(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	nc, br := rawDial(t, mustHost(t, g.URL), in.token(t, "frag", auth.Server))
	var flood []byte
	flood = append(flood, clientFrame(0x1, false, []byte("{"))...) // a text message begins
	for range 1000 {
		flood = append(flood, clientFrame(0x0, false, []byte(" "))...) // and never ends
	}
	// The server may close mid-flood; a write error then is expected.
	_, _ = nc.Write(flood)
	if code := readCloseCode(t, nc, br); code != 1008 {
		t.Fatalf("closed with %d after 1,000 one-byte fragments, want 1008", code)
	}
}

// clientFrame is one masked client frame (payload under 126 bytes).
func clientFrame(op byte, fin bool, payload []byte) []byte {
	if fin {
		op |= 0x80
	}
	f := []byte{op, 0x80 | byte(len(payload)), 1, 2, 3, 4}
	for i, c := range payload {
		f = append(f, c^f[2+i%4])
	}
	return f
}

// readCloseCode reads server frames until a close frame and returns its
// status code (0: the socket ended without one, or none within 10s).
func readCloseCode(t *testing.T, nc net.Conn, br *bufio.Reader) int {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Logf("no close frame: %v", err)
			return 0
		}
		n := int(h[1] & 0x7F)
		switch n {
		case 126:
			var l [2]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint16(l[:]))
		case 127:
			var l [8]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint64(l[:]))
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			return 0
		}
		if h[0]&0x0F == 0x8 && n >= 2 {
			return int(binary.BigEndian.Uint16(p))
		}
	}
}
