package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
)

// Sentinels for the ways a run fails before it starts, so the command can
// tell an operator which one happened.
var (
	// ErrUnreachable: nothing answers at the gateway's address.
	ErrUnreachable = errors.New("loadgen: cannot reach the gateway")
	// ErrTokenRefused: the gateway answered, and refused the token.
	ErrTokenRefused = errors.New("loadgen: the gateway refused the token")
	// ErrNoBoard: the board under load does not exist and Create is off.
	ErrNoBoard = errors.New("loadgen: no such board")
)

// httpBase is the gateway's HTTP origin for a ws:// or wss:// URL.
func httpBase(wsURL string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "" // New refuses such a URL before anything dials
	}
	scheme := "http"
	if u.Scheme == "wss" {
		scheme = "https"
	}
	return scheme + "://" + u.Host
}

// preflight asks the gateway authenticated REST questions with a server
// token before opening hundreds of connections, so a dead URL, a wrong key
// and a missing board fail at once with different messages instead of as a
// wall of dial errors or, worse, a run that measures nothing and exits 0
// (spectators of a missing board get no frames; reads never create one).
func (g *Generator) preflight(ctx context.Context) error {
	base := httpBase(g.cfg.URL)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tok, err := g.token(ctx, "load-player-0", auth.Server)
	if err != nil {
		return err
	}
	status, body, err := get(ctx, base, "/api/v1/boards", tok)
	if err != nil {
		return err
	}
	switch {
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%w (%d: %s): check --secret or --token", ErrTokenRefused, status, errorMessage(body))
	case status != http.StatusOK:
		return fmt.Errorf("loadgen: preflight GET %s/api/v1/boards: %d: %s", base, status, errorMessage(body))
	}
	if g.cfg.Create {
		return nil // Run creates it next
	}
	return g.boardExists(ctx, base, tok)
}

// boardExists asks GET /api/v1/boards/{board}: a 404 is ErrNoBoard.
func (g *Generator) boardExists(ctx context.Context, base, tok string) error {
	path := "/api/v1/boards/" + url.PathEscape(g.cfg.Board)
	status, body, err := get(ctx, base, path, tok)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("%w %q at %s: create it first (PUT /api/v1/boards/%s) or pass --create", ErrNoBoard, g.cfg.Board, base, g.cfg.Board)
	default:
		return fmt.Errorf("loadgen: preflight GET %s%s: %d: %s", base, path, status, errorMessage(body))
	}
}

// get is one preflight GET with the token: its status and the start of its body.
func get(ctx context.Context, base, path, tok string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("loadgen: preflight: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, body, nil
}

// errorMessage is the contract's error message from a REST body, or the
// body itself.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return string(bytes.TrimSpace(body))
}

// DevTokens returns a Config.Tokens that asks a --dev gateway's token
// endpoint (POST /api/v1/dev/token, served to loopback only) for each
// connection's token, valid for ttl.
func DevTokens(wsURL string, ttl time.Duration) func(context.Context, string, auth.Role) (string, error) {
	return func(ctx context.Context, sub string, role auth.Role) (string, error) {
		tok, err := client.DevToken(ctx, httpBase(wsURL), client.DevTokenRequest{Sub: sub, Role: string(role), TTL: ttl.String()})
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			return "", fmt.Errorf("%w at %s: %v", ErrUnreachable, uerr.URL, uerr.Err)
		}
		if err != nil {
			return "", fmt.Errorf("loadgen: %w", err)
		}
		return tok, nil
	}
}
