// Package auth verifies the gateway's JWTs (PROTOCOL.md §3): pinned
// algorithms (HS256 secret, one RS256/ES256/EdDSA public key, or a JWKS
// selected by kid), the claim rules, token extraction from an upgrade or REST
// request, and HS256 minting for --dev and the token command. It imports
// nothing from the project and never logs a token.
package auth
