package auth

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkVerify measures one Verify per algorithm (the cost of every
// upgrade and every REST call), for a token seen for the first time and for
// one seen before.
func BenchmarkVerify(b *testing.B) {
	k := newTestKeys(b)
	claims := valid(map[string]any{"role": "player", "boards": []string{"a"}, "name": "Alice"})
	for _, bc := range []struct {
		name  string
		cfg   Config
		token string
	}{
		{"HS256", Config{Secret: testSecret}, sign(b, jwt.SigningMethodHS256, testSecret, nil, claims)},
		{"RS256", Config{PublicKeyPEM: pkixPEM(b, &k.rsa.PublicKey)}, sign(b, jwt.SigningMethodRS256, k.rsa, nil, claims)},
		{"ES256", Config{PublicKeyPEM: pkixPEM(b, &k.ec.PublicKey)}, sign(b, jwt.SigningMethodES256, k.ec, nil, claims)},
		{"EdDSA", Config{PublicKeyPEM: pkixPEM(b, k.ed.Public())}, sign(b, jwt.SigningMethodEdDSA, k.ed, nil, claims)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.cfg.Now = fixedNow
			v, err := New(b.Context(), bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			// first: the signature checked on every call (a token never
			// seen); cached: the same token again (cache.go).
			b.Run("first", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					v.cache = verified{}
					if _, err := v.Verify(b.Context(), bc.token); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("cached", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.Verify(b.Context(), bc.token); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
