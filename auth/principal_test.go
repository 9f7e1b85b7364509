package auth

import "testing"

func TestRoleValid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role Role
		want bool
	}{
		{Player, true}, {Spectator, true}, {Server, true}, {Admin, true},
		{"", false}, {"root", false}, {"Admin", false}, {"player ", false},
	} {
		if got := tc.role.Valid(); got != tc.want {
			t.Errorf("Role(%q).Valid() = %v, want %v", tc.role, got, tc.want)
		}
	}
}

func TestMayAccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		boards []string
		board  string
		want   bool
	}{
		{"absent claim admits all", nil, "any", true},
		{"empty claim admits none", []string{}, "any", false},
		{"listed", []string{"a", "b"}, "b", true},
		{"not listed", []string{"a", "b"}, "c", false},
		{"case sensitive", []string{"a"}, "A", false},
	} {
		p := Principal{Member: "m", Role: Player, Boards: tc.boards}
		if got := p.MayAccess(tc.board); got != tc.want {
			t.Errorf("%s: MayAccess(%q) = %v, want %v", tc.name, tc.board, got, tc.want)
		}
	}
}

func TestMayScoreFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role         Role
		member       string
		clientWrites bool
		want         bool
	}{
		{Player, "me", true, true},
		{Player, "me", false, false},
		{Player, "other", true, false},
		{Spectator, "me", true, false},
		{Spectator, "other", false, false},
		{Server, "other", false, true},
		{Server, "other", true, true},
		{Admin, "other", false, true},
		{"", "me", true, false},
	} {
		p := Principal{Member: "me", Role: tc.role}
		if got := p.MayScoreFor(tc.member, tc.clientWrites); got != tc.want {
			t.Errorf("%s.MayScoreFor(%q, %v) = %v, want %v", tc.role, tc.member, tc.clientWrites, got, tc.want)
		}
	}
}

func TestManageAndLimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role            Role
		manage, limited bool
	}{
		{Player, false, true},
		{Spectator, false, true},
		{Server, false, false},
		{Admin, true, false},
	} {
		p := Principal{Member: "m", Role: tc.role}
		if got := p.MayManage(); got != tc.manage {
			t.Errorf("%s.MayManage() = %v, want %v", tc.role, got, tc.manage)
		}
		if got := p.Limited(); got != tc.limited {
			t.Errorf("%s.Limited() = %v, want %v", tc.role, got, tc.limited)
		}
	}
}
