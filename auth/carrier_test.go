package auth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestTokenFromRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		protocols []string // one Sec-WebSocket-Protocol line each
		authz     string
		query     string
		want      string
		carrier   Carrier
	}{
		{name: "nothing", carrier: CarrierNone},

		{name: "subprotocol", protocols: []string{"lb.v1, bearer.abc"}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol no spaces", protocols: []string{"lb.v1,bearer.abc"}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol extra spaces", protocols: []string{"  lb.v1 ,   bearer.abc  "}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol bearer first", protocols: []string{"bearer.abc, lb.v1"}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol over two header lines", protocols: []string{"lb.v1", "bearer.abc"}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol other values around", protocols: []string{"chat, lb.v1, bearer.abc, x"}, want: "abc", carrier: CarrierSubprotocol},
		{name: "subprotocol first bearer wins", protocols: []string{"lb.v1, bearer.a, bearer.b"}, want: "a", carrier: CarrierSubprotocol},
		{name: "subprotocol empty bearer skipped", protocols: []string{"lb.v1, bearer., bearer.b"}, want: "b", carrier: CarrierSubprotocol},
		{name: "jwt-shaped token", protocols: []string{"lb.v1, bearer.eyJh.eyJz.sig-_"}, want: "eyJh.eyJz.sig-_", carrier: CarrierSubprotocol},
		{name: "missing lb.v1", protocols: []string{"bearer.abc"}, carrier: CarrierNone},
		{name: "lb.v1 only", protocols: []string{"lb.v1"}, carrier: CarrierNone},
		{name: "only empty bearer", protocols: []string{"lb.v1, bearer."}, carrier: CarrierNone},
		{name: "prefix is case-sensitive", protocols: []string{"lb.v1, Bearer.abc"}, carrier: CarrierNone},
		{name: "lb.v1 must match exactly", protocols: []string{"lb.v1x, bearer.abc"}, carrier: CarrierNone},
		{name: "bearer with a space is not a token", protocols: []string{"lb.v1, bearer. x, bearer.y"}, want: "y", carrier: CarrierSubprotocol},
		{name: "bearer with a control byte", protocols: []string{"lb.v1, bearer.a\x01b"}, carrier: CarrierNone},
		{name: "empty lines", protocols: []string{"", " , "}, carrier: CarrierNone},

		{name: "header", authz: "Bearer abc", want: "abc", carrier: CarrierHeader},
		{name: "header scheme case-insensitive", authz: "bEaReR abc", want: "abc", carrier: CarrierHeader},
		{name: "header spaces trimmed", authz: "  Bearer    abc  ", want: "abc", carrier: CarrierHeader},
		{name: "header other scheme", authz: "Basic YWxhZGRpbjpvcGVu", carrier: CarrierNone},
		{name: "header scheme only", authz: "Bearer", carrier: CarrierNone},
		{name: "header empty token", authz: "Bearer   ", carrier: CarrierNone},

		{name: "query", query: "access_token=abc", want: "abc", carrier: CarrierQuery},
		{name: "query among others", query: "x=1&access_token=abc&y=2", want: "abc", carrier: CarrierQuery},
		{name: "query escaped", query: "access_token=a%2Eb", want: "a.b", carrier: CarrierQuery},
		{name: "query empty", query: "access_token=", carrier: CarrierNone},
		{name: "query other name", query: "token=abc", carrier: CarrierNone},

		{name: "subprotocol beats header and query", protocols: []string{"lb.v1, bearer.p"}, authz: "Bearer h", query: "access_token=q", want: "p", carrier: CarrierSubprotocol},
		{name: "header beats query", authz: "Bearer h", query: "access_token=q", want: "h", carrier: CarrierHeader},
		{name: "bearer without lb.v1 falls through to header", protocols: []string{"bearer.p"}, authz: "Bearer h", want: "h", carrier: CarrierHeader},
		{name: "bad header falls through to query", authz: "Basic x", query: "access_token=q", want: "q", carrier: CarrierQuery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &http.Request{Header: http.Header{}, URL: &url.URL{Path: "/ws", RawQuery: tc.query}}
			for _, p := range tc.protocols {
				r.Header.Add("Sec-WebSocket-Protocol", p)
			}
			if tc.authz != "" {
				r.Header.Set("Authorization", tc.authz)
			}
			got, c := TokenFromRequest(r)
			if got != tc.want || c != tc.carrier {
				t.Errorf("TokenFromRequest = %q, %v; want %q, %v", got, c, tc.want, tc.carrier)
			}
		})
	}
}

func TestTokenFromRequestNilURL(t *testing.T) {
	t.Parallel()
	if tok, c := TokenFromRequest(&http.Request{Header: http.Header{}}); tok != "" || c != CarrierNone {
		t.Errorf("got %q, %v", tok, c)
	}
}

func TestCarrierString(t *testing.T) {
	t.Parallel()
	for c, want := range map[Carrier]string{
		CarrierNone: "none", CarrierSubprotocol: "subprotocol", CarrierHeader: "header", CarrierQuery: "query", 99: "none",
	} {
		if got := c.String(); got != want {
			t.Errorf("Carrier(%d).String() = %q, want %q", int(c), got, want)
		}
	}
}

// FuzzTokenFromRequest checks the extraction invariants on arbitrary headers
// and queries: it never panics, a carrier comes with a token and the token
// is a substring of where it claims to have come from.
func FuzzTokenFromRequest(f *testing.F) {
	f.Add("lb.v1, bearer.abc", "", "")
	f.Add("", "Bearer abc", "access_token=q")
	f.Fuzz(func(t *testing.T, protocol, authz, query string) {
		r := &http.Request{Header: http.Header{}, URL: &url.URL{Path: "/ws", RawQuery: query}}
		if protocol != "" {
			r.Header.Set("Sec-WebSocket-Protocol", protocol)
		}
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		tok, c := TokenFromRequest(r)
		if (tok == "") != (c == CarrierNone) {
			t.Fatalf("token %q with carrier %v", tok, c)
		}
		switch c {
		case CarrierSubprotocol:
			if !isToken(tok) || strings.Contains(tok, ",") || !strings.Contains(protocol, bearerPrefix+tok) || !strings.Contains(protocol, subprotocol) {
				t.Fatalf("subprotocol token %q from %q", tok, protocol)
			}
		case CarrierHeader:
			if _, ok := fromSubprotocols([]string{protocol}); ok {
				t.Fatalf("header won over a subprotocol token in %q", protocol)
			}
			if !strings.Contains(authz, tok) || tok != strings.TrimSpace(tok) {
				t.Fatalf("header token %q from %q", tok, authz)
			}
		case CarrierQuery:
			if _, ok := BearerToken(authz); ok {
				t.Fatalf("query won over header %q", authz)
			}
			if got := r.URL.Query().Get(queryParam); !strings.Contains(got, tok) {
				t.Fatalf("query token %q from %q", tok, query)
			}
		case CarrierNone:
		default:
			t.Fatalf("unknown carrier %d", c)
		}
	})
}
