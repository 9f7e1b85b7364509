package webhook_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

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
	} {
		err := webhook.CheckURL(ctx, r, bad)
		if !errors.Is(err, rank.ErrInvalidWebhook) || !strings.Contains(err.Error(), "field url") {
			t.Errorf("%s: %v, want refused naming url", bad, err)
		}
	}
}

func TestControl(t *testing.T) {
	for addr, refused := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:443": true, "10.9.8.7:80": true, "169.254.169.254:80": true,
		"93.184.216.34:443": false, "[2606:4700::1]:443": false,
	} {
		err := webhook.Control("tcp", addr, nil)
		if (err != nil) != refused || (err != nil && !errors.Is(err, webhook.ErrRefusedTarget)) {
			t.Errorf("%s: %v, want refused %v", addr, err, refused)
		}
	}
}
