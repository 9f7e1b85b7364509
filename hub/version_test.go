package hub_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/proto"
)

// TestUpgradeNeedsHTTP11: an upgrade request below HTTP/1.1 (HTTP/1.0, or
// a request line without a version) is refused with 426, as
// coder/websocket refuses it under net/http (RFC 6455 §4.1), even with a
// valid token; the same request as HTTP/1.1 is upgraded.
func TestUpgradeNeedsHTTP11(t *testing.T) {
	t.Parallel()
	in := newInfra(t, memoryKind)
	g := in.gateway(t, gwOptions{})
	host := mustHost(t, g.URL)
	tok := in.token(t, "old", auth.Spectator)
	for _, tc := range []struct {
		version string
		status  int
	}{
		{" HTTP/1.0", http.StatusUpgradeRequired},
		{"", http.StatusUpgradeRequired},
		{" HTTP/1.1", http.StatusSwitchingProtocols},
	} {
		nc, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
		fmt.Fprintf(nc, "GET /ws%s\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"+
			"Authorization: Bearer %s\r\n\r\n", tc.version, host, key, proto.Subprotocol, tok)
		res, err := http.ReadResponse(bufio.NewReader(nc), nil)
		nc.Close()
		if err != nil {
			t.Fatalf("request line version %q: %v", tc.version, err)
		}
		if res.StatusCode != tc.status {
			t.Errorf("request line version %q: %d, want %d", tc.version, res.StatusCode, tc.status)
		}
	}
}
