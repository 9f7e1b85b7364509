package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/webhook"
)

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f[host], nil
}

func TestCheckURL(t *testing.T) {
	r := fakeResolver{
		"hooks.example":  {netip.MustParseAddr("93.184.216.34")},
		"sneaky.example": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
		"meta.example":   {netip.MustParseAddr("169.254.169.254")},
		"nat64.example":  {netip.MustParseAddr("64:ff9b::a9fe:a9fe")}, // 169.254.169.254 through NAT64
	}
	ctx := context.Background()
	for _, ok := range []string{"https://hooks.example/x", "http://93.184.216.34:8080/", "https://[2606:4700::1]/"} {
		if err := webhook.CheckURL(ctx, r, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"http://127.0.0.1/", "http://localhost:9000/", "http://[::1]/", "http://10.0.0.8/", "http://192.168.1.1/",
		"http://172.16.5.5/", "http://169.254.169.254/latest", "http://[fe80::1]/", "http://[fd00::1]/",
		"http://0.0.0.0/", "http://100.64.1.1/", "http://[::ffff:127.0.0.1]/", "https://sneaky.example/", "https://meta.example/",
		"http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::1]/", "http://[::127.0.0.1]/", "http://198.18.0.1/",
		"http://240.0.0.1/", "http://255.255.255.255/", "https://nat64.example/",
	} {
		err := webhook.CheckURL(ctx, r, bad)
		if !errors.Is(err, rank.ErrInvalidWebhook) || !strings.Contains(err.Error(), "field url") {
			t.Errorf("%s: %v, want refused naming url", bad, err)
		}
	}
}

// TestRefused: every IANA special-purpose block (IPv4 and IPv6), multicast
// and IPv6 outside global unicast is refused, whatever form the address
// takes (IPv4-mapped, IPv4-compatible, NAT64, 6to4, a zone); public
// unicast addresses are not.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.9", "169.254.169.254",
		"172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.0.170", "192.0.2.7", "192.31.196.1", "192.52.193.1",
		"192.88.99.1", "192.168.1.1", "192.175.48.6", "198.18.0.1", "198.19.255.254", "198.51.100.7", "203.0.113.9",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "254.1.2.3", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::10.1.2.3", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "64:ff9b::5db8:d822",
		"64:ff9b:1::1", "100::1", "2001::1", "2001:2::1", "2001:10::1", "2001:20::1", "2001:db8::1", "2002:7f00:1::1",
		"2002:5db8:d822::1", "2620:4f:8000::1", "3fff::1", "5f00::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
		"fec0::1", "ff02::1", "ff0e::1", "4000::1", "e000::1",
	} {
		if !webhook.Refused(netip.MustParseAddr(s)) {
			t.Errorf("%s: not refused", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "100.128.0.1", "172.32.0.1", "192.0.1.1", "198.20.0.1",
		"223.255.255.254", "::ffff:93.184.216.34", "2606:4700::1", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888"} {
		if webhook.Refused(netip.MustParseAddr(s)) {
			t.Errorf("%s: refused", s)
		}
	}
	if !webhook.Refused(netip.Addr{}) {
		t.Error("the zero Addr is not refused")
	}
}

// TestDialerRefuses: the exported Dialer refuses by the address it
// connects to, before connecting: a listener on loopback never sees the
// connection.
func TestDialerRefuses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	for _, addr := range []string{ln.Addr().String(), "localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)} {
		c, err := webhook.Dialer(time.Second).DialContext(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, webhook.ErrRefusedTarget) {
			t.Fatalf("dial %s: %v, want ErrRefusedTarget", addr, err)
		}
	}
	select {
	case <-accepted:
		t.Fatal("the loopback listener accepted a connection")
	default:
	}
}

func TestControl(t *testing.T) {
	for addr, refused := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:443": true, "10.9.8.7:80": true, "169.254.169.254:80": true,
		"[64:ff9b::a9fe:a9fe]:80": true, "[2002:a00:1::1]:80": true, "[::a00:1]:80": true, "198.18.3.4:80": true,
		"240.1.2.3:80": true, "255.255.255.255:80": true,
		"93.184.216.34:443": false, "[2606:4700::1]:443": false,
	} {
		err := webhook.Guard{}.Control("tcp", addr, nil)
		if (err != nil) != refused || (err != nil && !errors.Is(err, webhook.ErrRefusedTarget)) {
			t.Errorf("%s: %v, want refused %v", addr, err, refused)
		}
	}
}

// TestGuardLoopback: a --dev gateway's guard lets a webhook reach a
// receiver on this machine (loopback, by address or by a name resolving
// there, and the listener is reached), and nothing else the default guard
// refuses: private, link-local, NAT64 or IPv4-compatible forms of 127/8.
func TestGuardLoopback(t *testing.T) {
	t.Parallel()
	g := webhook.Guard{Loopback: true}
	r := fakeResolver{
		"localhost":      {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		"sneaky.example": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3")},
	}
	ctx := context.Background()
	for _, ok := range []string{"http://127.0.0.1:9000/", "http://localhost:9000/hook", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://127.8.9.10/"} {
		if err := g.CheckURL(ctx, r, ok); err != nil {
			t.Errorf("%s: %v, want allowed", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.8/", "http://192.168.1.1/", "http://169.254.169.254/", "http://[fd00::1]/",
		"http://0.0.0.0/", "http://[64:ff9b::7f00:1]/", "http://[::127.0.0.1]/", "https://sneaky.example/"} {
		if err := g.CheckURL(ctx, r, bad); !errors.Is(err, rank.ErrInvalidWebhook) {
			t.Errorf("%s: %v, want refused", bad, err)
		}
	}
	for addr, refused := range map[string]bool{"127.0.0.1:80": false, "[::1]:443": false, "10.9.8.7:80": true, "[::a00:1]:80": true, "93.184.216.34:443": false} {
		if err := g.Control("tcp", addr, nil); (err != nil) != refused {
			t.Errorf("Control %s: %v, want refused %v", addr, err, refused)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := g.Dialer(time.Second).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial the loopback receiver: %v", err)
	}
	c.Close()
}
