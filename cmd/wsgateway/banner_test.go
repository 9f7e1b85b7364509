package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBannerPages: the --dev start banner names every page a new user
// opens (spectator, player, stream overlay) and each printed URL answers
// 200, the REST one with the printed admin token.
func TestBannerPages(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	pages := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  (spectator page|player page|stream overlay|REST) +(http://\S+)$`).FindAllStringSubmatch(dev.banner, -1) {
		pages[m[1]] = true
		if !strings.HasPrefix(m[2], "http://"+dev.addr+"/") {
			t.Errorf("%s: %s is not on the gateway's address %s", m[1], m[2], dev.addr)
		}
		if code, body := httpDo(t, "GET", m[2], dev.token, ""); code != 200 {
			t.Errorf("%s: GET %s = %d %s", m[1], m[2], code, body)
		}
	}
	for _, want := range []string{"spectator page", "player page", "stream overlay", "REST"} {
		if !pages[want] {
			t.Errorf("the banner lacks the %s URL:\n%s", want, dev.banner)
		}
	}
}
