package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Claims are decoded here, not by golang-jwt: encoding/json matches object
// keys ignoring case (Unicode folding too: "ſub" is "sub") and lets the last
// of repeated keys win, so {"role":"player","rOlE":"admin"} would read as an
// admin token while an issuer or proxy with an exact parser saw a player.
// decodeClaims takes a §3 claim only under its exact name and refuses a
// payload that repeats any name or spells a §3 name another way. Unknown
// claims (issuers add their own) are skipped.

// claimNames are the payload keys decodeClaims reads.
var claimNames = [...]string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "role", "boards", "name"}

// decodeClaims fills cl from a token's decoded payload.
func decodeClaims(payload []byte, cl *claims) error {
	return walkObject(payload, func(key string, val json.RawMessage) error {
		var dst any
		switch key {
		case "iss":
			dst = &cl.Issuer
		case "sub":
			dst = &cl.Subject
		case "aud":
			dst = &cl.Audience
		case "exp":
			dst = &cl.ExpiresAt
		case "nbf":
			dst = &cl.NotBefore
		case "iat":
			dst = &cl.IssuedAt
		case "jti":
			dst = &cl.ID
		case "role":
			dst = &cl.Role
		case "boards":
			dst = &cl.Boards
		case "name":
			dst = &cl.Name
		default:
			for _, n := range claimNames {
				if strings.EqualFold(key, n) {
					return fmt.Errorf("claim %q is not %q", key, n)
				}
			}
			return nil // an issuer's own claim
		}
		if err := json.Unmarshal(val, dst); err != nil {
			return fmt.Errorf("claim %s: %w", key, err)
		}
		return nil
	})
}

// walkObject calls fn for each member of the JSON object data, in order,
// and fails on anything but one object, or on a key seen before (compared
// after unescaping: "\u0072ole" is "role").
func walkObject(data []byte, fn func(key string, val json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("payload is not a JSON object")
	}
	seen := make(map[string]struct{}, 8)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		key := t.(string) // an object key is always a string token
		if _, dup := seen[key]; dup {
			return fmt.Errorf("claim %q repeated", key)
		}
		seen[key] = struct{}{}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fmt.Errorf("claim %q: %w", key, err)
		}
		if err := fn(key, val); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("payload: %w", err)
	}
	// Anything but JSON's white space after the object, valid JSON or not
	// (a second Token would only catch the valid kind: "{}A" slipped by;
	// bytes.TrimSpace would let "\f" by).
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return errors.New("payload: data after the object")
	}
	return nil
}

// uniqueHeader refuses a token whose header repeats a name (golang-jwt
// reads it into a map: the last "alg" or "kid" would win).
func uniqueHeader(token string) error {
	seg, _, ok := strings.Cut(token, ".")
	if !ok {
		return errors.New("token is not three segments")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return errors.New("header is not base64url")
	}
	return walkObject(b, func(string, json.RawMessage) error { return nil })
}

// payloadOf returns the decoded payload segment of a compact JWS.
func payloadOf(token string) ([]byte, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("token is not three segments")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("payload is not base64url")
	}
	return b, nil
}

// noClaims is what golang-jwt decodes the payload into: nothing. It checks
// the signature and the algorithm; decodeClaims reads the claims.
type noClaims struct{}

func (noClaims) UnmarshalJSON([]byte) error                   { return nil }
func (noClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (noClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (noClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (noClaims) GetIssuer() (string, error)                   { return "", nil }
func (noClaims) GetSubject() (string, error)                  { return "", nil }
func (noClaims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }
