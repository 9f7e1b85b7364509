package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// testKeys are the signing keys of one test.
type testKeys struct {
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	ed        ed25519.PrivateKey
}

func newTestKeys(t testing.TB) testKeys {
	t.Helper()
	var k testKeys
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(t testing.TB, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkixPEM(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock(t, "PUBLIC KEY", der)
}

func certPEM(t testing.TB, priv *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "idp"},
		NotBefore:    testNow.Add(-time.Hour),
		NotAfter:     testNow.Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock(t, "CERTIFICATE", der)
}

func TestVerifyPEM(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	rsaPEM := pkixPEM(t, &k.rsa.PublicKey)
	ecPEM := pkixPEM(t, &k.ec.PublicKey)
	edPEM := pkixPEM(t, k.ed.Public())
	rsaDER, _ := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	claims := valid(nil)

	type tokenCase struct {
		name  string
		token string
		want  *Error
	}
	common := func(pemBytes []byte) []tokenCase {
		return []tokenCase{
			{"alg none", unsigned(t, nil, claims), ErrUnauthorized},
			// The classic confusion: the public key's bytes used as an HMAC secret.
			{"HS256 keyed with the PEM", sign(t, jwt.SigningMethodHS256, pemBytes, nil, claims), ErrUnauthorized},
			{"HS256 keyed with the DER", sign(t, jwt.SigningMethodHS256, rsaDER, nil, claims), ErrUnauthorized},
			{"HS256 with the secret", sign(t, jwt.SigningMethodHS256, testSecret, nil, claims), ErrUnauthorized},
		}
	}
	for _, mode := range []struct {
		name   string
		pem    []byte
		tokens []tokenCase
	}{
		{"RSA", rsaPEM, append(common(rsaPEM),
			tokenCase{"RS256", sign(t, jwt.SigningMethodRS256, k.rsa, nil, claims), nil},
			tokenCase{"RS256 expired", sign(t, jwt.SigningMethodRS256, k.rsa, nil, valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix()})), ErrTokenExpired},
			tokenCase{"RS256 other key", sign(t, jwt.SigningMethodRS256, k.rsa2, nil, claims), ErrUnauthorized},
			tokenCase{"RS384 same key", sign(t, jwt.SigningMethodRS384, k.rsa, nil, claims), ErrUnauthorized},
			tokenCase{"PS256 same key", sign(t, jwt.SigningMethodPS256, k.rsa, nil, claims), ErrUnauthorized},
			tokenCase{"ES256", sign(t, jwt.SigningMethodES256, k.ec, nil, claims), ErrUnauthorized},
			tokenCase{"EdDSA", sign(t, jwt.SigningMethodEdDSA, k.ed, nil, claims), ErrUnauthorized},
		)},
		{"RSA PKCS1", pemBlock(t, "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)), []tokenCase{
			{"RS256", sign(t, jwt.SigningMethodRS256, k.rsa, nil, claims), nil},
		}},
		{"EC", ecPEM, append(common(ecPEM),
			tokenCase{"ES256", sign(t, jwt.SigningMethodES256, k.ec, nil, claims), nil},
			tokenCase{"ES256 bad sub", sign(t, jwt.SigningMethodES256, k.ec, nil, valid(map[string]any{"sub": "a b"})), ErrUnauthorized},
			tokenCase{"RS256", sign(t, jwt.SigningMethodRS256, k.rsa, nil, claims), ErrUnauthorized},
		)},
		{"EC certificate", certPEM(t, k.ec), []tokenCase{
			{"ES256", sign(t, jwt.SigningMethodES256, k.ec, nil, claims), nil},
		}},
		{"Ed25519", edPEM, append(common(edPEM),
			tokenCase{"EdDSA", sign(t, jwt.SigningMethodEdDSA, k.ed, nil, claims), nil},
			tokenCase{"EdDSA long name", sign(t, jwt.SigningMethodEdDSA, k.ed, nil, valid(map[string]any{"name": strings.Repeat("n", 40)})), ErrUnauthorized},
			tokenCase{"ES256", sign(t, jwt.SigningMethodES256, k.ec, nil, claims), ErrUnauthorized},
		)},
		{"comment block before key", append([]byte("-----BEGIN COMMENT-----\naGk=\n-----END COMMENT-----\n"), edPEM...), []tokenCase{
			{"EdDSA", sign(t, jwt.SigningMethodEdDSA, k.ed, nil, claims), nil},
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, Config{PublicKeyPEM: mode.pem})
			for _, tc := range mode.tokens {
				t.Run(tc.name, func(t *testing.T) {
					_, err := verify(t, v, tc.token)
					wantErr(t, err, tc.want, tc.token)
				})
			}
		})
	}
}

func TestNewPEMErrors(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(k.ec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pem  []byte
		want string
	}{
		{"private key", pemBlock(t, "PRIVATE KEY", privDER), "private key"},
		{"RSA private key", pemBlock(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.rsa)), "private key"},
		{"P-384", pkixPEM(t, &p384.PublicKey), "ES256 needs P-256"},
		{"RSA 1024", pkixPEM(t, &small.PublicKey), "need at least 2048"},
		{"corrupt DER", pemBlock(t, "PUBLIC KEY", []byte("nope")), "parse PUBLIC KEY"},
		{"no key block", pemBlock(t, "COMMENT", []byte("hi")), "no PEM public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(t.Context(), Config{PublicKeyPEM: tc.pem})
			if err == nil || !strings.HasPrefix(err.Error(), "auth: --jwt-public-key: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// jwksServer serves a JWK Set that a test may change, counting fetches.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64
	mu      sync.Mutex // guards body
	body    []byte
}

func newJWKSServer(t *testing.T, keys ...jwkset.JWKMarshal) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.set(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		body := s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(t *testing.T, keys ...jwkset.JWKMarshal) {
	t.Helper()
	body, err := json.Marshal(jwkset.JWKSMarshal{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// jwk builds the public JWK of key; alg "" leaves the alg member out.
func jwk(t testing.TB, key any, kid string, alg jwkset.ALG) jwkset.JWKMarshal {
	t.Helper()
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg, USE: jwkset.UseSig}})
	if err != nil {
		t.Fatalf("jwk %s: %v", kid, err)
	}
	m := j.Marshal()
	m.ALG = alg // Ed25519 keys get EdDSA filled in; tests want it absent too
	return m
}

func TestVerifyJWKS(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	rsaPEM := pkixPEM(t, &k.rsa.PublicKey)
	oct := jwkset.JWKMarshal{KTY: jwkset.KtyOct, KID: "h1", ALG: jwkset.AlgHS256, K: base64.RawURLEncoding.EncodeToString(testSecret)}
	srv := newJWKSServer(t,
		jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256),
		jwk(t, &k.ec.PublicKey, "e1", ""),          // alg from the key type
		jwk(t, k.ed.Public(), "d1", ""),            // alg from the key type
		jwk(t, &k.rsa2.PublicKey, "r512", "RS512"), // alg outside the pinned set
		oct,
	)
	logs := &logBuffer{}
	v := newVerifier(t, Config{JWKSURL: srv.URL, Logger: logs.logger()})
	claims := valid(nil)
	kid := func(s string) map[string]any { return map[string]any{"kid": s} }
	for _, tc := range []struct {
		name  string
		token string
		want  *Error
	}{
		{"RS256 r1", sign(t, jwt.SigningMethodRS256, k.rsa, kid("r1"), claims), nil},
		{"ES256 e1", sign(t, jwt.SigningMethodES256, k.ec, kid("e1"), claims), nil},
		{"EdDSA d1", sign(t, jwt.SigningMethodEdDSA, k.ed, kid("d1"), claims), nil},
		{"RS256 r1 expired", sign(t, jwt.SigningMethodRS256, k.rsa, kid("r1"), valid(map[string]any{"exp": testNow.Add(-time.Hour).Unix()})), ErrTokenExpired},
		{"RS256 r1 unknown role", sign(t, jwt.SigningMethodRS256, k.rsa, kid("r1"), valid(map[string]any{"role": "root"})), ErrInvalidClaims},
		{"no kid", sign(t, jwt.SigningMethodRS256, k.rsa, nil, claims), ErrUnknownKey},
		{"numeric kid", sign(t, jwt.SigningMethodRS256, k.rsa, map[string]any{"kid": 1}, claims), ErrUnknownKey},
		{"RS256 signed by another key under r1", sign(t, jwt.SigningMethodRS256, k.rsa2, kid("r1"), claims), ErrBadSignature},
		{"RS256 token naming the EC key", sign(t, jwt.SigningMethodRS256, k.rsa, kid("e1"), claims), ErrUnknownKey},
		{"ES256 token naming the RSA key", sign(t, jwt.SigningMethodES256, k.ec, kid("r1"), claims), ErrUnauthorized},
		{"EdDSA token naming the EC key", sign(t, jwt.SigningMethodEdDSA, k.ed, kid("e1"), claims), ErrUnauthorized},
		{"RS384 under r1", sign(t, jwt.SigningMethodRS384, k.rsa, kid("r1"), claims), ErrUnauthorized},
		{"RS512 under r512", sign(t, jwt.SigningMethodRS512, k.rsa2, kid("r512"), claims), ErrUnauthorized},
		{"RS256 under r512", sign(t, jwt.SigningMethodRS256, k.rsa2, kid("r512"), claims), ErrUnauthorized},
		{"HS256 keyed with the RSA PEM under r1", sign(t, jwt.SigningMethodHS256, rsaPEM, kid("r1"), claims), ErrUnauthorized},
		{"HS256 with an oct JWK", sign(t, jwt.SigningMethodHS256, testSecret, kid("h1"), claims), ErrUnauthorized},
		{"alg none under r1", unsigned(t, kid("r1"), claims), ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify(t, v, tc.token)
			wantErr(t, err, tc.want, tc.token)
			if tc.token != "" && strings.Contains(logs.String(), tc.token) {
				t.Errorf("token leaked into the log")
			}
		})
	}
}

func TestJWKSUnknownKID(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	claims := valid(nil)
	kid := func(s string) map[string]any { return map[string]any{"kid": s} }

	t.Run("forged kid", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t, jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256))
		v := newVerifier(t, Config{JWKSURL: srv.URL})
		before := srv.fetches.Load()
		for i := range 3 {
			tok := sign(t, jwt.SigningMethodRS256, k.rsa2, kid("forged"), claims)
			_, err := verify(t, v, tok)
			wantErr(t, err, ErrUnknownKey, tok)
			_ = i
		}
		// One refresh for the first unknown kid, then the limiter holds.
		if got := srv.fetches.Load() - before; got != 1 {
			t.Errorf("forged kids caused %d refreshes, want 1", got)
		}
	})

	t.Run("rotated key is fetched", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t, jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256))
		v := newVerifier(t, Config{JWKSURL: srv.URL})
		tok := sign(t, jwt.SigningMethodES256, k.ec, kid("e2"), claims)
		srv.set(t, jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256), jwk(t, &k.ec.PublicKey, "e2", jwkset.AlgES256))
		p, err := verify(t, v, tok)
		wantErr(t, err, nil, tok)
		if p.Member != "alice" {
			t.Errorf("member = %q", p.Member)
		}
	})

	t.Run("foreign issuer costs no refresh", func(t *testing.T) {
		t.Parallel()
		srv := newJWKSServer(t, jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256))
		v := newVerifier(t, Config{JWKSURL: srv.URL, Issuer: "https://idp.example"})
		before := srv.fetches.Load()
		tok := sign(t, jwt.SigningMethodRS256, k.rsa2, kid("unknown"), valid(map[string]any{"iss": "https://evil.example"}))
		_, err := verify(t, v, tok)
		wantErr(t, err, ErrIssuer, tok)
		if got := srv.fetches.Load() - before; got != 0 {
			t.Errorf("a foreign issuer caused %d JWKS fetches", got)
		}
		good := sign(t, jwt.SigningMethodRS256, k.rsa, kid("r1"), valid(map[string]any{"iss": "https://idp.example"}))
		_, err = verify(t, v, good)
		wantErr(t, err, nil, good)
	})
}

func TestJWKSUnreachable(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	logs := &logBuffer{}
	v := newVerifier(t, Config{JWKSURL: srv.URL + "/jwks?key=s3cr3t", Logger: logs.logger()})
	if !strings.Contains(logs.String(), "JWKS refresh failed") {
		t.Errorf("a failed first fetch was not logged: %q", logs.String())
	}
	tok := sign(t, jwt.SigningMethodRS256, k.rsa, map[string]any{"kid": "r1"}, valid(nil))
	_, err := verify(t, v, tok)
	wantErr(t, err, ErrUnauthorized, tok)
	if strings.Contains(logs.String(), tok) {
		t.Errorf("token leaked into the log")
	}
}

func TestJWKSBodyLimit(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	// A valid set padded past the limit with whitespace must be refused.
	body, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk(t, &k.rsa.PublicKey, "r1", jwkset.AlgRS256)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pad  int
		want *Error
	}{
		{"within limit", 1000, nil},
		{"over limit", maxJWKSBytes, ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			padded := append([]byte(strings.Repeat(" ", tc.pad)), body...)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(padded) }))
			t.Cleanup(srv.Close)
			v := newVerifier(t, Config{JWKSURL: srv.URL})
			tok := sign(t, jwt.SigningMethodRS256, k.rsa, map[string]any{"kid": "r1"}, valid(nil))
			_, err := verify(t, v, tok)
			wantErr(t, err, tc.want, tok)
		})
	}
}
