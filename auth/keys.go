package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// minRSABits refuses keys too small to be trusted.
const minRSABits = 2048

// The JWKS fetch limits. The set's body is bounded because it comes from the
// network; an unknown kid waits at most jwksWaitMax for the refresh limiter
// and the refresh itself, so a forged kid cannot hold a request for long.
const (
	maxJWKSBytes      = 1 << 20
	jwksHTTPTimeout   = 10 * time.Second
	jwksWaitMax       = 5 * time.Second
	jwksRefreshEvery  = time.Hour
	jwksUnknownKIDGap = 30 * time.Second
)

// keyAlg is the one algorithm a public key verifies.
func keyAlg(key any) (string, error) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", fmt.Errorf("RSA key has %d bits, need at least %d", k.N.BitLen(), minRSABits)
		}
		return jwt.SigningMethodRS256.Alg(), nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("ECDSA key on %s, ES256 needs P-256", k.Curve.Params().Name)
		}
		return jwt.SigningMethodES256.Alg(), nil
	case ed25519.PublicKey:
		return jwt.SigningMethodEdDSA.Alg(), nil
	}
	return "", fmt.Errorf("unsupported key type %T (want RSA, ECDSA P-256 or Ed25519 public key)", key)
}

// parsePublicKeyPEM reads the first public key or certificate in b.
func parsePublicKeyPEM(b []byte) (any, string, error) {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, "", errors.New("no PEM public key found")
		}
		var key any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			return nil, "", errors.New("file holds a private key; give the public key")
		default:
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("parse %s: %w", block.Type, err)
		}
		alg, err := keyAlg(key)
		if err != nil {
			return nil, "", err
		}
		return key, alg, nil
	}
}

// newJWKS builds the refreshing key store behind a JWKS URL.
func newJWKS(ctx context.Context, rawURL string, log *slog.Logger) (jwkset.Storage, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", rawURL)
	}
	shown := u.Redacted()
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{rawURL}, keyfunc.Override{
		Client:           &http.Client{Transport: limitBody{http.DefaultTransport}},
		HTTPTimeout:      jwksHTTPTimeout,
		RateLimitWaitMax: jwksWaitMax,
		RefreshErrorHandlerFunc: func(string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				log.WarnContext(ctx, "auth: JWKS refresh failed", "url", shown, "err", err)
			}
		},
		RefreshInterval:   jwksRefreshEvery,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(jwksUnknownKIDGap), 1),
	})
	if err != nil {
		return nil, err
	}
	return kf.Storage(), nil
}

// limitBody caps JWKS response bodies at maxJWKSBytes.
type limitBody struct{ base http.RoundTripper }

func (l limitBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = http.MaxBytesReader(nil, resp.Body, maxJWKSBytes)
	return resp, nil
}

// jwksKey looks t's kid up in store and pins the algorithm to the key's:
// the JWK's declared alg must agree with its key type, and the token's alg
// must be that one.
func jwksKey(ctx context.Context, store jwkset.Storage, t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, fmt.Errorf("%w: token has no kid", ErrUnknownKey)
	}
	jwk, err := store.KeyRead(ctx, kid)
	if err != nil {
		return nil, fmt.Errorf("%w: kid %q: %w", ErrUnknownKey, kid, err)
	}
	m := jwk.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, fmt.Errorf("%w: kid %q: key use %q is not sig", ErrUnknownKey, kid, m.USE)
	}
	key := jwk.Key()
	if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		key = pk.Public() // a set that leaked a private key still verifies with its public half
	}
	alg, err := keyAlg(key)
	if err != nil {
		return nil, fmt.Errorf("%w: kid %q: %w", ErrUnknownKey, kid, err)
	}
	if declared := m.ALG.String(); declared != "" && declared != alg {
		return nil, fmt.Errorf("%w: kid %q declares alg %s for a %s key", ErrUnknownKey, kid, declared, alg)
	}
	if got := t.Method.Alg(); got != alg {
		return nil, fmt.Errorf("%w: kid %q is a %s key, token is %s", ErrUnknownKey, kid, alg, got)
	}
	return key, nil
}
