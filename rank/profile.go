package rank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/wsgateway/wsgateway/internal/names"
)

// Profile is how a member is shown on every board (docs/protocol.md §7): global,
// one per member. Every field is optional; "" means absent.
type Profile struct {
	Name    string `json:"name,omitempty"`
	Avatar  string `json:"avatar,omitempty"`
	Country string `json:"country,omitempty"`
}

// Limits of a profile (§7).
const (
	MaxAvatarBytes = 256
)

// ErrInvalidProfile is a profile that fails validation; the wrapping message
// names the field.
var ErrInvalidProfile = &Error{"bad_request", "invalid profile"}

// ErrNoProfile is a Get or Delete of a member that has no profile.
var ErrNoProfile = errors.New("rank: no profile")

// Profiles stores members' profiles. They are global (one member, many
// boards), so an engine keeps them apart from every board's data. All
// methods are safe for concurrent use; each validates the member id
// (ErrInvalidMember) and Put validates the profile (ErrInvalidProfile).
type Profiles interface {
	// PutProfile replaces the member's profile.
	PutProfile(ctx context.Context, member string, p Profile) error
	// GetProfile returns ErrNoProfile when the member has none.
	GetProfile(ctx context.Context, member string) (Profile, error)
	// DeleteProfile returns ErrNoProfile when the member had none.
	DeleteProfile(ctx context.Context, member string) error
	// Profiles reads many members at once (one round trip on Redis); the
	// map holds only the members that have a profile.
	Profiles(ctx context.Context, members []string) (map[string]Profile, error)
}

// Decorator fills the profile fields of entries in place (R20): Name from
// the profile when it has one (else the stored name stays: the name claim
// of the last token that scored), Avatar and Country when the profile has
// them. It never fails: what it cannot learn in time (ctx) stays as it was.
type Decorator interface {
	Decorate(ctx context.Context, lists ...[]Entry)
}

// Decorate applies p to e as R20 says.
func (p Profile) Decorate(e *Entry) {
	if p.Name != "" {
		e.Name = p.Name
	}
	e.Avatar, e.Country = p.Avatar, p.Country
}

// Empty reports whether p has no field at all.
func (p Profile) Empty() bool { return p == Profile{} }

// Validate checks every field and returns ErrInvalidProfile with a message
// naming the first bad one.
func (p Profile) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalidProfile, field, fmt.Sprintf(format, args...))
	}
	if p.Empty() {
		return fmt.Errorf("%w: a profile needs at least one of name, avatar, country (DELETE removes one)", ErrInvalidProfile)
	}
	if p.Name != "" {
		if err := names.Check(p.Name); err != nil {
			return bad("name", "%v", err)
		}
	}
	if p.Avatar != "" {
		if err := validAvatar(p.Avatar); err != nil {
			return bad("avatar", "%v", err)
		}
	}
	if p.Country != "" && !ValidCountry(p.Country) {
		return bad("country", "%q is not an assigned ISO 3166-1 alpha-2 code in capitals, like FR", truncate(p.Country, 16))
	}
	return nil
}

// ParseProfile decodes a PUT body strictly: a JSON object with only the
// fields name, avatar and country, each at most once, each a string, then
// validated.
func ParseProfile(body []byte) (Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Profile{}, fmt.Errorf("%w: want a JSON object", ErrInvalidProfile)
	}
	var p Profile
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Profile{}, fmt.Errorf("%w: %v", ErrInvalidProfile, err)
		}
		key, _ := tok.(string)
		var dst *string
		switch key {
		case "name":
			dst = &p.Name
		case "avatar":
			dst = &p.Avatar
		case "country":
			dst = &p.Country
		default:
			return Profile{}, fmt.Errorf("%w: field %s: unknown field", ErrInvalidProfile, truncate(key, 32))
		}
		if seen[key] {
			return Profile{}, fmt.Errorf("%w: field %s: appears twice", ErrInvalidProfile, key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Profile{}, fmt.Errorf("%w: field %s: %v", ErrInvalidProfile, key, err)
		}
		if err := json.Unmarshal(raw, dst); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return Profile{}, fmt.Errorf("%w: field %s: want a string", ErrInvalidProfile, key)
		}
		if *dst == "" {
			return Profile{}, fmt.Errorf("%w: field %s: empty; leave the field out instead", ErrInvalidProfile, key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Profile{}, fmt.Errorf("%w: %v", ErrInvalidProfile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Profile{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidProfile)
	}
	if p.Name != "" {
		// NFC before the rule, so that two spellings of one look are one
		// name (internal/names).
		n, err := names.Normalize(p.Name)
		if err != nil {
			return Profile{}, fmt.Errorf("%w: field name: %v", ErrInvalidProfile, err)
		}
		p.Name = n
	}
	return p, p.Validate()
}

// validAvatar accepts an absolute https URL with a host, at most
// MaxAvatarBytes bytes of printable ASCII, without user info.
func validAvatar(s string) error {
	if len(s) > MaxAvatarBytes {
		return fmt.Errorf("%d bytes, at most %d", len(s), MaxAvatarBytes)
	}
	for i := 0; i < len(s); i++ {
		if !uriByte(s[i]) {
			return fmt.Errorf("byte %d is not allowed in a URL (percent-encode it)", i)
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "https" {
		return errors.New("want an https:// URL")
	}
	if u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return errors.New("want an https:// URL with a host")
	}
	if u.User != nil {
		return errors.New("user info is not allowed")
	}
	return nil
}

// uriByte reports whether c may appear unencoded in a URI (RFC 3986:
// unreserved, reserved and '%'); spaces, quotes, angle brackets, braces,
// backslashes and everything outside ASCII must be percent-encoded.
func uriByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0
}

// ValidCountry reports whether s is an officially assigned ISO 3166-1
// alpha-2 code, in capitals.
func ValidCountry(s string) bool {
	if len(s) != 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' {
		return false
	}
	return strings.Contains(isoCountries, " "+s+" ")
}

// isoCountries are the 249 officially assigned ISO 3166-1 alpha-2 codes,
// space-separated with a space at both ends.
const isoCountries = " " +
	"AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ " +
	"BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ " +
	"CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ " +
	"DE DJ DK DM DO DZ " +
	"EC EE EG EH ER ES ET " +
	"FI FJ FK FM FO FR " +
	"GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY " +
	"HK HM HN HR HT HU " +
	"ID IE IL IM IN IO IQ IR IS IT " +
	"JE JM JO JP " +
	"KE KG KH KI KM KN KP KR KW KY KZ " +
	"LA LB LC LI LK LR LS LT LU LV LY " +
	"MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ " +
	"NA NC NE NF NG NI NL NO NP NR NU NZ " +
	"OM " +
	"PA PE PF PG PH PK PL PM PN PR PS PT PW PY " +
	"QA " +
	"RE RO RS RU RW " +
	"SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ " +
	"TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ " +
	"UA UG UM US UY UZ " +
	"VA VC VE VG VI VN VU " +
	"WF WS " +
	"YE YT " +
	"ZA ZM ZW "

// truncate keeps client-supplied text in error messages short.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
