package api_test

import (
	"strings"
	"testing"
)

// TestMessagesKeepHTMLCharacters: REST error messages say <, > and & as
// they are ("Bearer <jwt>", "is not <tier>-<n>"), not as \u003c escapes,
// whichever path answers them; both engines.
func TestMessagesKeepHTMLCharacters(t *testing.T) {
	t.Parallel()
	forEngines(t, func(t *testing.T, eng engine) {
		e := newEnv(t, eng.new(t))
		e.putBoard("lg", `{"reset":"daily","cohort":{"size":2},"league":{"tiers":["bronze","silver"],"promote":1,"demote":1}}`)
		for _, c := range []struct{ path, tok, want string }{
			{"/api/v1/boards", "", "Bearer <jwt>"},
			{"/api/v1/boards/lg/cohorts/gold-1/top", adminToken(t), "is not <tier>-<n> with a tier of board lg"},
		} {
			r := e.do("GET", c.path, c.tok, "")
			if r.status < 400 || !strings.Contains(string(r.body), c.want) || strings.Contains(string(r.body), `\u00`) {
				t.Errorf("GET %s: %d %s, want an error saying %q as written", c.path, r.status, r.body, c.want)
			}
		}
	})
}
