package hub

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/clientaddr"
)

func TestClientIP(t *testing.T) {
	t.Parallel()
	h := &Hub{cfg: Config{TrustedProxies: clientaddr.Normalize([]netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:172.16.0.0/108"), // 4in6 spelling of 172.16.0.0/12
		netip.MustParsePrefix("fd00::/8"),
	})}}
	for _, tc := range []struct {
		name   string
		peer   string
		xff    []string
		wantIP string // "" = unknown
	}{
		{"plain peer", "192.0.2.1:80", nil, "192.0.2.1"},
		{"untrusted peer ignores XFF", "192.0.2.1:80", []string{"198.51.100.7"}, "192.0.2.1"},
		{"trusted peer, one hop", "10.0.0.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"right-most untrusted hop wins", "10.0.0.1:80", []string{"6.6.6.6, 198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"several header lines", "10.0.0.1:80", []string{"6.6.6.6", "198.51.100.7", "172.16.3.4"}, "198.51.100.7"},
		{"every hop trusted: left-most", "10.0.0.1:80", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"no XFF: the proxy", "10.0.0.1:80", nil, "10.0.0.1"},
		{"garbage stops at the last trusted hop", "10.0.0.1:80", []string{"198.51.100.7, junk, 10.3.3.3"}, "10.3.3.3"},
		{"hop with port", "10.0.0.1:80", []string{"198.51.100.7:5555"}, "198.51.100.7"},
		{"ipv6 hop with port", "[fd00::1]:80", []string{"[2001:db8::5]:443"}, "2001:db8::5"},
		{"mapped peer", "[::ffff:10.0.0.1]:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"4in6 prefix trusts v4 peer", "172.16.0.9:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"unparsable peer", "pipe", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/ws", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got := h.ClientIP(r)
			if tc.wantIP == "" {
				if got.IsValid() {
					t.Fatalf("ClientIP = %v, want unknown", got)
				}
				return
			}
			if got != netip.MustParseAddr(tc.wantIP) {
				t.Fatalf("ClientIP = %v, want %s", got, tc.wantIP)
			}
		})
	}
}

func TestExpiryMillis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exp  time.Time
		want int64
	}{
		{time.UnixMilli(1_700_000_000_123), 1_700_000_000_123},
		{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), 10413792000000}, // past int64 ns
		{time.Unix(1<<62, 0), maxExpiryMillis},
	} {
		if got := expiryMillis(tc.exp); got != tc.want {
			t.Errorf("expiryMillis(%v) = %d, want %d", tc.exp, got, tc.want)
		}
	}
}

func TestExposureWarning(t *testing.T) {
	t.Parallel()
	proxies, _ := clientaddr.Parse("10.0.0.1")
	for _, tc := range []struct {
		addr  string
		cfg   Config
		warns bool
	}{
		{":8080", Config{}, true},
		{"0.0.0.0:8080", Config{}, true},
		{"[::]:8080", Config{}, true},
		{"192.0.2.10:8080", Config{}, true},
		{"127.0.0.1:8080", Config{}, false},
		{"[::1]:8080", Config{}, false},
		{"localhost:8080", Config{}, false},
		{":8080", Config{TrustedProxies: proxies}, false},
		{":8080", Config{MaxConnsPerIP: -1}, false},
	} {
		h := &Hub{cfg: tc.cfg}
		if got := h.ExposureWarning(tc.addr); (got != "") != tc.warns {
			t.Errorf("ExposureWarning(%q, %+v) = %q, want a warning: %v", tc.addr, tc.cfg, got, tc.warns)
		}
	}
}
