// Package auth verifies the gateway's JWTs (docs/protocol.md §3): pinned
// algorithms (HS256 secret, one RS256/ES256/EdDSA public key, or a JWKS
// selected by kid), the claim rules, token extraction from an upgrade or REST
// request, and HS256 minting for --dev and the token command. From the
// project it imports only internal/names (the sub and name rules, shared
// with the domain), and it never logs a token.
package auth
