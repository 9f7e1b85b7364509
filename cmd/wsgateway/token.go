package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/client"
)

// tokenCmd prints a signed HS256 token: for bots, curl and tests. With
// --dev-url it asks a --dev gateway's token endpoint instead, so the
// guides' token lines work on the quick start's gateway, whose key is
// random and never printed.
func tokenCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		secret, sub, role, boards, name, iss, aud, devURL string
		ttl                                               time.Duration
	)
	f := newFlagSet("wsgateway token", getenv, stderr)
	// The secret's twin is the gateway's own LB_JWT_SECRET, so a shell that
	// runs the gateway can mint tokens for it without repeating the key.
	f.SecretFrom(&secret, "secret", "LB_JWT_SECRET", "HS256 key, at least 32 bytes")
	f.StringVar(&sub, "sub", "", "member id (the sub claim); required")
	f.StringVar(&role, "role", string(auth.Player), "player, spectator, server or admin")
	f.StringVar(&boards, "boards", "", "comma-separated board ids the token may touch; empty = all")
	f.StringVar(&name, "name", "", "display name, at most 32 characters")
	f.DurationVar(&ttl, "ttl", time.Hour, "lifetime")
	f.StringVar(&iss, "issuer", getenv("LB_JWT_ISSUER"), "iss claim (env LB_JWT_ISSUER)")
	f.StringVar(&aud, "audience", getenv("LB_JWT_AUDIENCE"), "aud claim (env LB_JWT_AUDIENCE)")
	f.StringVar(&devURL, "dev-url", "", "ask the --dev gateway at this URL (http://localhost:8080) for the token instead of signing it with --secret")
	if err := f.parse(args); err != nil {
		return flagError(err)
	}
	if sub == "" {
		return usageError("token: --sub is required")
	}
	if devURL != "" {
		return devTokenCmd(ctx, devURL, client.DevTokenRequest{Sub: sub, Role: role, Name: name, Boards: splitList(boards), TTL: ttl.String()}, stdout)
	}
	// Named here rather than left to MintHS256, whose words know no flags.
	switch {
	case secret == "":
		return usageError("token: no key: give --secret or set LB_JWT_SECRET (the gateway's HS256 key), or --dev-url http://localhost:8080 to ask a gateway run with --dev")
	case len(secret) < 32:
		return usageError(fmt.Sprintf("token: the key from --secret or LB_JWT_SECRET is %d bytes, need at least 32", len(secret)))
	}
	if !auth.Role(role).Valid() {
		return usageError(fmt.Sprintf("token: --role %q is not player, spectator, server or admin", role))
	}
	tok, err := auth.MintHS256([]byte(secret), auth.Claims{
		Sub: sub, Role: auth.Role(role), Boards: splitList(boards), Name: name,
		TTL: ttl, Issuer: iss, Audience: aud,
	})
	if err != nil {
		return usageError("token: " + err.Error())
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// devTokenCmd prints a token from the --dev gateway at base. The gateway
// checks the claims as `token` does, and names what it refuses.
func devTokenCmd(ctx context.Context, base string, r client.DevTokenRequest, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tok, err := client.DevToken(ctx, base, r)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
