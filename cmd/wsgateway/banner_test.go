package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestBannerPages: the --dev start banner names every page a new user
// opens (spectator, player, stream overlay, console) and each printed URL
// answers 200, the REST one with the printed admin token.
func TestBannerPages(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	pages := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  (spectator page|player page|stream overlay|REST|console) +(http://\S+)$`).FindAllStringSubmatch(dev.banner, -1) {
		pages[m[1]] = true
		if !strings.HasPrefix(m[2], "http://"+dev.addr+"/") {
			t.Errorf("%s: %s is not on the gateway's address %s", m[1], m[2], dev.addr)
		}
		if code, body := httpDo(t, "GET", m[2], dev.token, ""); code != 200 {
			t.Errorf("%s: GET %s = %d %s", m[1], m[2], code, body)
		}
	}
	for _, want := range []string{"spectator page", "player page", "stream overlay", "REST", "console"} {
		if !pages[want] {
			t.Errorf("the banner lacks the %s URL:\n%s", want, dev.banner)
		}
	}
}

// TestBannerMoreTokens: the --dev banner says how to get more tokens, and
// the `wsgateway token --dev-url` line it prints, run as printed, prints a
// token the gateway takes for the member and role it names (the dev key is
// random, so `wsgateway token --secret` cannot mint one).
func TestBannerMoreTokens(t *testing.T) {
	t.Parallel()
	dev := startDev(t)
	line := regexp.MustCompile(`(?m)^  more tokens: wsgateway (token --dev-url .*)$`).FindStringSubmatch(dev.banner)
	if line == nil {
		t.Fatalf("the banner does not say how to get more tokens:\n%s", dev.banner)
	}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), strings.Fields(line[1]), envMap(nil), &out, &errOut); err != nil {
		t.Fatalf("wsgateway %s: %v\n%s", line[1], err, errOut.String())
	}
	tok := strings.TrimSpace(out.String())
	if strings.ContainsAny(tok, "{}\" ") {
		t.Fatalf("wsgateway %s printed %q, not a bare token", line[1], tok)
	}
	if code, body := httpDo(t, "GET", "http://"+dev.addr+"/api/v1/boards", tok, ""); code != 200 {
		t.Fatalf("GET /api/v1/boards with the printed token = %d %s", code, body)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", tok)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Sub, Role string }
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Sub != "alice" || claims.Role != "player" {
		t.Errorf("the printed token's claims are %s, want sub alice and role player", payload)
	}
	if !strings.Contains(dev.banner, `curl -X POST http://`+dev.addr+`/api/v1/dev/token`) {
		t.Errorf("the banner lacks the curl form of the token endpoint:\n%s", dev.banner)
	}
}
