package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// profilesOf is the store's profile side (§7).
func profilesOf(_ *testing.T, s rank.Store) rank.Profiles { return s }

// testProfiles: put, get, replace, delete and batched reads of global
// profiles (§7); bad input changes nothing; profiles outlive boards and
// never appear in the store's own reads (the gateway decorates entries).
func testProfiles(t *testing.T, f Factory) {
	s := f(t, nil)
	ps := profilesOf(t, s)
	ctx := t.Context()

	ann := rank.Profile{Name: "Ann Élise 🏁", Avatar: "https://img.example/a.png?s=64", Country: "FR"}
	if _, err := ps.GetProfile(ctx, "rtp-ann"); !errors.Is(err, rank.ErrNoProfile) {
		t.Fatalf("GetProfile of a member without one: %v, want ErrNoProfile", err)
	}
	if err := ps.DeleteProfile(ctx, "rtp-ann"); !errors.Is(err, rank.ErrNoProfile) {
		t.Fatalf("DeleteProfile of a member without one: %v, want ErrNoProfile", err)
	}
	if err := ps.PutProfile(ctx, "rtp-ann", ann); err != nil {
		t.Fatalf("PutProfile: %v", err)
	}
	if got, err := ps.GetProfile(ctx, "rtp-ann"); err != nil || got != ann {
		t.Fatalf("GetProfile = %+v, %v; want %+v", got, err, ann)
	}

	// A PUT replaces: fields left out are gone.
	only := rank.Profile{Country: "JP"}
	if err := ps.PutProfile(ctx, "rtp-ann", only); err != nil {
		t.Fatalf("PutProfile (replace): %v", err)
	}
	if got, err := ps.GetProfile(ctx, "rtp-ann"); err != nil || got != only {
		t.Fatalf("after replace: %+v, %v; want %+v", got, err, only)
	}

	// Bad input: the documented error, nothing changed.
	bad := []struct {
		member string
		p      rank.Profile
		want   error
	}{
		{"bad member", ann, rank.ErrInvalidMember},
		{"", ann, rank.ErrInvalidMember},
		{"rtp-ann", rank.Profile{}, rank.ErrInvalidProfile},
		{"rtp-ann", rank.Profile{Name: strings.Repeat("x", 33)}, rank.ErrInvalidProfile},
		{"rtp-ann", rank.Profile{Name: "a\u202eb"}, rank.ErrInvalidProfile},
		{"rtp-ann", rank.Profile{Avatar: "http://img.example/a.png"}, rank.ErrInvalidProfile},
		{"rtp-ann", rank.Profile{Country: "XX"}, rank.ErrInvalidProfile},
	}
	for _, b := range bad {
		if err := ps.PutProfile(ctx, b.member, b.p); !errors.Is(err, b.want) {
			t.Errorf("PutProfile(%q, %+v) = %v, want %v", b.member, b.p, err, b.want)
		}
	}
	if got, err := ps.GetProfile(ctx, "rtp-ann"); err != nil || got != only {
		t.Fatalf("after refused puts: %+v, %v; want %+v", got, err, only)
	}
	for _, m := range []string{"bad member", ""} {
		if _, err := ps.GetProfile(ctx, m); !errors.Is(err, rank.ErrInvalidMember) {
			t.Errorf("GetProfile(%q) = %v, want ErrInvalidMember", m, err)
		}
		if err := ps.DeleteProfile(ctx, m); !errors.Is(err, rank.ErrInvalidMember) {
			t.Errorf("DeleteProfile(%q) = %v, want ErrInvalidMember", m, err)
		}
	}

	// Batched reads: 300 members (more than one pipeline chunk would be
	// needed at a smaller bound), every third with a profile, repeats and an
	// invalid id in the list.
	want := map[string]rank.Profile{}
	var ask []string
	for i := range 300 {
		m := fmt.Sprintf("rtp-m%03d", i)
		ask = append(ask, m)
		if i%3 == 0 {
			p := rank.Profile{Name: fmt.Sprintf("Member %d", i), Country: "DE"}
			if i%2 == 0 {
				p.Avatar = fmt.Sprintf("https://img.example/%d.png", i)
			}
			if err := ps.PutProfile(ctx, m, p); err != nil {
				t.Fatal(err)
			}
			want[m] = p
		}
	}
	ask = append(ask, "rtp-m000", "not valid", "rtp-ann")
	want["rtp-ann"] = only
	got, err := ps.Profiles(ctx, ask)
	if err != nil {
		t.Fatalf("Profiles: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Profiles returned %d profiles, want %d", len(got), len(want))
	}
	for m, p := range want {
		if got[m] != p {
			t.Fatalf("Profiles[%s] = %+v, want %+v", m, got[m], p)
		}
	}
	if got, err := ps.Profiles(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Profiles(nil) = %v, %v; want an empty map", got, err)
	}

	// Global: a board's deletion leaves profiles alone, and the store's
	// reads carry the token name only (decoration is the gateway's).
	put(t, s, board("rt-prof", nil))
	apply(t, s, named(delta("rt-prof", "e1", "rtp-ann", 5), "Token Ann"))
	wantTop(t, s, "rt-prof", ent(1, "rtp-ann", 5, "Token Ann"))
	if err := s.DeleteBoard(ctx, "rt-prof"); err != nil {
		t.Fatal(err)
	}
	if got, err := ps.GetProfile(ctx, "rtp-ann"); err != nil || got != only {
		t.Fatalf("after DeleteBoard: %+v, %v; want %+v", got, err, only)
	}

	if err := ps.DeleteProfile(ctx, "rtp-ann"); err != nil {
		t.Fatalf("DeleteProfile: %v", err)
	}
	if _, err := ps.GetProfile(ctx, "rtp-ann"); !errors.Is(err, rank.ErrNoProfile) {
		t.Fatalf("GetProfile after delete: %v, want ErrNoProfile", err)
	}
	if got, err := ps.Profiles(ctx, []string{"rtp-ann"}); err != nil || len(got) != 0 {
		t.Fatalf("Profiles after delete: %v, %v; want none", got, err)
	}
}
