package clientaddr

import (
	"net/netip"
	"testing"
)

func TestClient(t *testing.T) {
	t.Parallel()
	ps := Normalize([]netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:172.16.0.0/108"), // 4in6 spelling of 172.16.0.0/12
	})
	for _, tc := range []struct {
		peer    string
		xff     []string
		want    string // "" = unknown
		garbled bool
		key     string
	}{
		{"192.0.2.1:80", nil, "192.0.2.1", false, "192.0.2.1"},
		{"192.0.2.1:80", []string{"198.51.100.7"}, "192.0.2.1", false, "192.0.2.1"}, // untrusted peer: XFF ignored
		{"10.0.0.1:80", []string{"6.6.6.6, 198.51.100.7, 10.9.9.9"}, "198.51.100.7", false, "198.51.100.7"},
		{"172.16.0.9:80", []string{"198.51.100.7"}, "198.51.100.7", false, "198.51.100.7"},
		{"10.0.0.1:80", []string{"198.51.100.7, junk, 10.3.3.3"}, "10.3.3.3", true, "via 10.3.3.3"},
		{"127.0.0.1:80", nil, "127.0.0.1", false, ""}, // loopback: not counted by the caps
		{"[2001:db8:1:2::9]:80", nil, "2001:db8:1:2::9", false, "2001:db8:1:2::/64"},
		{"pipe", nil, "", false, ""},
	} {
		got, garbled := ps.Client(tc.peer, tc.xff)
		if (tc.want == "" && got.IsValid()) || (tc.want != "" && got != netip.MustParseAddr(tc.want)) || garbled != tc.garbled {
			t.Errorf("Client(%s, %q) = %v, %v; want %s, %v", tc.peer, tc.xff, got, garbled, tc.want, tc.garbled)
		}
		if k := ps.Key(tc.peer, tc.xff); k != tc.key {
			t.Errorf("Key(%s, %q) = %q, want %q", tc.peer, tc.xff, k, tc.key)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := Parse(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,")
	if err != nil || len(got) != 3 || got[1] != netip.MustParsePrefix("192.0.2.7/32") {
		t.Fatalf("Parse = %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
