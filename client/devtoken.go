package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/wsgateway/wsgateway/proto"
)

// DevTokenRequest is the body of a --dev gateway's POST /api/v1/dev/token
// (docs/protocol.md §2): Role "" is a player, Boards nil every board, TTL
// "" the gateway's default.
type DevTokenRequest struct {
	Sub    string   `json:"sub"`
	Role   string   `json:"role,omitempty"`
	Name   string   `json:"name,omitempty"`
	Boards []string `json:"boards,omitempty"`
	TTL    string   `json:"ttl,omitempty"`
}

// DevToken asks the --dev gateway at base (http://host:port) for a token: the endpoint answers loopback clients only, and
// 404 on a gateway without --dev or with a configured key. A failure to
// reach the gateway is returned as the *url.Error of net/http.
func DevToken(ctx context.Context, base string, r DevTokenRequest) (string, error) {
	endpoint := strings.TrimRight(base, "/") + "/api/v1/dev/token"
	body, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("client: dev token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("client: dev token: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = " (the gateway is not running with --dev, or has a configured JWT key)"
		}
		return "", fmt.Errorf("client: dev token from %s: %s: %s%s", endpoint, resp.Status, errorText(b), hint)
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Token == "" {
		return "", fmt.Errorf("client: dev token from %s: no token in %q", endpoint, b)
	}
	return out.Token, nil
}

// errorText is the contract's "code: message" of a REST error body, or
// the body itself.
func errorText(body []byte) string {
	var e proto.ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return string(bytes.TrimSpace(body))
}
